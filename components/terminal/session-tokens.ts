/**
 * Browser side of the lab session API: one POST per lab page load starts or resumes the
 * learner's session and returns a terminal token per machine. Terminals share the answer.
 */
export interface SessionTokens {
  sessionId: string;
  tokens: Map<string, string>;
}

export class SessionError extends Error {
  constructor(
    message: string,
    readonly status: number,
  ) {
    super(message);
  }
}

const inFlight = new Map<string, Promise<SessionTokens>>();

/** Tokens for a lab's session; `fresh` forces a new request (after a token was refused). */
export function sessionTokens(slug: string, fresh = false): Promise<SessionTokens> {
  let entry = inFlight.get(slug);
  if (!entry || fresh) {
    entry = fetchTokens(slug);
    inFlight.set(slug, entry);
    entry.catch(() => inFlight.delete(slug));
  }
  return entry;
}

async function fetchTokens(slug: string): Promise<SessionTokens> {
  const response = await fetch(`/api/labs/${encodeURIComponent(slug)}/session`, { method: "POST" });
  const body = (await response.json().catch(() => ({}))) as {
    error?: string;
    sessionId?: string;
    machines?: { name: string; token: string }[];
  };
  if (!response.ok || !body.sessionId || !body.machines) {
    throw new SessionError(body.error ?? `ラボを開始できませんでした（HTTP ${response.status}）`, response.status);
  }
  return { sessionId: body.sessionId, tokens: new Map(body.machines.map((m) => [m.name, m.token])) };
}
