/**
 * Browser end of the grader API (server/grader/progress.ts has the payload): progress, the live
 * progress stream, running the current step's check and revealing a hint. Every response is
 * parsed with zod here, so components only ever see valid data or a GraderApiError.
 */
import { z } from "zod";
import { Progress } from "@/server/grader/progress";

/** POST /api/sessions/:id/check. */
const CheckResponse = z.object({ progress: Progress });
/** POST /api/sessions/:id/hints/:stepId; the hint is Markdown. */
const HintResponse = z.object({ hint: z.string() });
/** What the API answers with when it refuses; `error` is meant for the learner. */
const ErrorResponse = z.object({ error: z.string() });

/**
 * A request failed. `kind` says how: the server refused with a message already in the user's
 * language (`refused`, the text is `message`), or no usable answer came (`network`, `http`,
 * `invalid`: the page words these from messages "grader.*"). `status` is 0 without an HTTP answer.
 */
export class GraderApiError extends Error {
  override readonly name = "GraderApiError";

  constructor(
    message: string,
    readonly status: number,
    readonly kind: "refused" | "network" | "http" | "invalid" = "refused",
  ) {
    super(message);
  }
}

/** Text for a GraderApiError in the page's language; `t` is useTranslations("grader"). */
export function graderErrorText(err: unknown, t: (key: "network" | "http" | "invalid", values?: { status: number }) => string): string {
  if (!(err instanceof GraderApiError)) return String(err);
  if (err.kind === "refused") return err.message;
  return t(err.kind, { status: err.status });
}

function sessionPath(sessionId: string): string {
  return `/api/sessions/${encodeURIComponent(sessionId)}`;
}

/** URL of the Server-Sent Events stream: one `progress` event with Progress JSON per change. */
export function progressEventsUrl(sessionId: string): string {
  return `${sessionPath(sessionId)}/events`;
}

export async function fetchProgress(sessionId: string, signal?: AbortSignal): Promise<Progress> {
  return requestJson(`${sessionPath(sessionId)}/progress`, { signal }, Progress);
}

/** Runs the current step's check now (it can take up to the step's timeout) and returns the new progress. */
export async function runCheck(sessionId: string): Promise<Progress> {
  return (await requestJson(`${sessionPath(sessionId)}/check`, { method: "POST" }, CheckResponse)).progress;
}

/** Reveals a step's hint (the server records that it was shown) and returns its Markdown. */
export async function revealHint(sessionId: string, stepId: string): Promise<string> {
  const url = `${sessionPath(sessionId)}/hints/${encodeURIComponent(stepId)}`;
  return (await requestJson(url, { method: "POST" }, HintResponse)).hint;
}

/** Parses one `progress` event's data; undefined for anything that is not valid Progress JSON. */
export function parseProgressEvent(data: unknown): Progress | undefined {
  if (typeof data !== "string") return undefined;
  try {
    const parsed = Progress.safeParse(JSON.parse(data));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}

/**
 * One JSON request of the session API, its answer parsed with `schema`; a refusal, a lost
 * connection or an answer that does not parse is a GraderApiError. Shared with the exam (components/exam/exam-api.ts).
 */
export async function requestJson<T>(url: string, init: RequestInit, schema: z.ZodType<T>): Promise<T> {
  let response: Response;
  try {
    response = await fetch(url, { ...init, cache: "no-store" });
  } catch (err) {
    if (init.signal?.aborted) throw err;
    throw new GraderApiError("network", 0, "network");
  }
  const body: unknown = await response.json().catch(() => undefined);
  if (!response.ok) {
    const refusal = ErrorResponse.safeParse(body);
    if (refusal.success) throw new GraderApiError(refusal.data.error, response.status);
    throw new GraderApiError("http", response.status, "http");
  }
  const parsed = schema.safeParse(body);
  if (!parsed.success) throw new GraderApiError("invalid", response.status, "invalid");
  return parsed.data;
}
