/**
 * Browser side of the lab session API: one start-or-resume per lab page load, shared by the
 * terminals, the steps and the notices. The start does not hold a request open: the page posts
 * with `?async=1`, follows a start that is not ready on `GET /api/sessions/:id/start` (stage,
 * setup script, queue position; `useStartState` shows it), and posts again when it is ready for
 * a terminal token per machine and per extra tab (keyed by terminal name: `node01`, `node01#2`,
 * server/terminal/tab-names.ts).
 *
 * A start that failed is not started again by itself (each try would boot machines): the failure
 * is kept until the learner asks for a new start (`retryStart`). Only a lost connection or a busy
 * server (429, 502, 504) is retried, by whoever asks next.
 */
import { useSyncExternalStore } from "react";
import type { StartView } from "@/server/sessions/start-progress";
import { terminalName, type TabView } from "@/server/terminal/tab-names";

export interface SessionTokens {
  sessionId: string;
  tokens: Map<string, string>;
  /** The learner's open extra tabs when the answer came. */
  tabs: TabView[];
}

/** A tab's token as the session and tab APIs send it. */
export interface TabToken extends TabView {
  token: string;
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

/** How often a start that is not ready is looked at, ms. */
const START_POLL_MS = 1_000;
/** Answers that say "not now" rather than "no": asked again next time. */
const TRANSIENT_STATUS = new Set([429, 502, 504]);

/** Where a lab's start is, for the page. */
export type StartState =
  { phase: "starting"; view?: StartView } | { phase: "ready"; sessionId: string } | { phase: "failed"; message: string; status: number };

/**
 * A terminal's connect fetches tokens again when they are older than this, ms: the server's live
 * 10 minutes (server/terminal/token.ts), so a reconnect (a restart, a network change) presents
 * one still valid instead of being refused once and asking again.
 */
export const TOKEN_REFRESH_MS = 8 * 60_000;
/** A refused token asks for new ones, unless they were fetched this recently (the other terminals of the page were refused too), ms. */
const FRESH_ENOUGH_MS = 5_000;

const inFlight = new Map<string, Promise<SessionTokens>>();
const fetchedAt = new Map<string, number>();
const states = new Map<string, StartState>();
const listeners = new Set<() => void>();

function publish(slug: string, state: StartState): void {
  states.set(slug, state);
  for (const listener of listeners) listener();
}

/** Adds a new tab's token (POST /api/sessions/:id/tabs) to the lab's shared answer. */
export async function rememberTabToken(slug: string, tab: TabToken): Promise<void> {
  const current = await inFlight.get(slug);
  current?.tokens.set(terminalName(tab.machine, tab.number), tab.token);
}

/** Tokens for a lab's session; `fresh` asks again (a token was refused). A failed start stays failed until retryStart. */
export function sessionTokens(slug: string, fresh = false): Promise<SessionTokens> {
  let entry = inFlight.get(slug);
  if (!entry || (fresh && tokensAgeMs(slug) > FRESH_ENOUGH_MS && states.get(slug)?.phase !== "failed")) {
    entry = fetchTokens(slug);
    inFlight.set(slug, entry);
    fetchedAt.set(slug, Date.now());
    entry.catch((error: unknown) => {
      const final = error instanceof SessionError && !TRANSIENT_STATUS.has(error.status);
      if (final) publish(slug, { phase: "failed", message: error.message, status: error.status });
      else if (inFlight.get(slug) === entry) inFlight.delete(slug);
    });
  }
  return entry;
}

/** How long ago the lab's tokens were asked for, ms (Infinity: never). */
export function tokensAgeMs(slug: string): number {
  const at = fetchedAt.get(slug);
  return at === undefined ? Infinity : Date.now() - at;
}

/** The learner asked for a new start after a failed one. */
export function retryStart(slug: string): void {
  inFlight.delete(slug);
  publish(slug, { phase: "starting" });
  void sessionTokens(slug).catch(() => undefined);
}

/** The lab's start as it goes (re-renders on every change). */
export function useStartState(slug: string): StartState | undefined {
  return useSyncExternalStore(
    (listener) => {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    () => states.get(slug),
    () => undefined,
  );
}

async function fetchTokens(slug: string): Promise<SessionTokens> {
  if (states.get(slug)?.phase !== "ready") publish(slug, { phase: "starting" });
  for (;;) {
    const response = await fetch(`/api/labs/${encodeURIComponent(slug)}/session?async=1`, { method: "POST" });
    const body = (await response.json().catch(() => ({}))) as {
      error?: string;
      sessionId?: string;
      state?: string;
      machines?: { name: string; token: string }[];
      tabs?: TabToken[];
    };
    if (response.status === 401) {
      // Signed out (or the sign-in expired): back to the login page, then to this lab.
      window.location.assign(`/login?next=${encodeURIComponent(window.location.pathname)}`);
    }
    if (response.status === 202 && body.sessionId) {
      await followStart(slug, body.sessionId);
      continue; // ready: the next answer has the tokens
    }
    if (!response.ok || !body.sessionId || !body.machines) throw new SessionError(body.error ?? "", response.status);
    publish(slug, { phase: "ready", sessionId: body.sessionId });
    const tabs = body.tabs ?? [];
    return {
      sessionId: body.sessionId,
      tokens: new Map([
        ...body.machines.map((m) => [m.name, m.token] as const),
        ...tabs.map((t) => [terminalName(t.machine, t.number), t.token] as const),
      ]),
      tabs: tabs.map(({ machine, number }) => ({ machine, number })),
    };
  }
}

/** Polls the start's stage until the session is ready; throws when it failed. */
async function followStart(slug: string, sessionId: string): Promise<void> {
  for (;;) {
    const response = await fetch(`/api/sessions/${encodeURIComponent(sessionId)}/start`, { cache: "no-store" });
    if (response.ok) {
      const view = (await response.json()) as StartView;
      if (view.state === "ready") return;
      if (view.state !== "starting") throw new SessionError(view.error ?? "", 500);
      publish(slug, { phase: "starting", view });
    } else if (!TRANSIENT_STATUS.has(response.status) && response.status < 500) {
      const body = (await response.json().catch(() => ({}))) as { error?: string };
      throw new SessionError(body.error ?? "", response.status);
    }
    await new Promise((r) => setTimeout(r, START_POLL_MS));
  }
}
