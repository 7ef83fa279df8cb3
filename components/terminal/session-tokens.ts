/**
 * Browser side of the lab session API: one POST per lab page load starts or resumes the
 * learner's session and returns a terminal token per machine. Terminals share the answer.
 */
export interface SessionTokens {
  sessionId: string;
  tokens: Map<string, string>;
}

/** The session API refused; `message` is the server's text (in the user's language) or empty. */
export class SessionError extends Error {
  constructor(
    message: string,
    readonly status: number,
  ) {
    super(message);
  }
}

/** Text for a failed session request in the page's language; `t` is useTranslations("terminal"). */
export function sessionErrorText(error: unknown, t: (key: "startFailed", values: { status: number }) => string): string {
  if (error instanceof SessionError) return error.message || t("startFailed", { status: error.status });
  return error instanceof Error ? error.message : String(error);
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
  if (response.status === 401) {
    // Signed out (or the sign-in expired): back to the login page, then to this lab.
    window.location.assign(`/login?next=${encodeURIComponent(window.location.pathname)}`);
  }
  if (!response.ok || !body.sessionId || !body.machines) throw new SessionError(body.error ?? "", response.status);
  return { sessionId: body.sessionId, tokens: new Map(body.machines.map((m) => [m.name, m.token])) };
}
