/** Browser side of the cohort APIs: one fetch helper that answers the JSON body and the server's translated error. */
export interface ApiResult<T> {
  ok: boolean;
  status: number;
  body: T | null;
  /** The server's message (in the user's language) when not ok. */
  error: string | null;
}

export async function callApi<T>(url: string, init: RequestInit & { json?: unknown } = {}): Promise<ApiResult<T>> {
  const { json, ...rest } = init;
  const headers = new Headers(rest.headers);
  if (json !== undefined) headers.set("content-type", "application/json");
  const res = await fetch(url, { ...rest, headers, body: json !== undefined ? JSON.stringify(json) : rest.body }).catch(() => null);
  if (!res) return { ok: false, status: 0, body: null, error: null };
  const body = (await res.json().catch(() => null)) as (T & { error?: string }) | null;
  return { ok: res.ok, status: res.status, body, error: res.ok ? null : (body?.error ?? null) };
}
