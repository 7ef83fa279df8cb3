/**
 * Terminal tokens: what a browser presents in `hello`. A token names one terminal of one lab
 * session (a machine, and which of its shells: `n`, absent for the first), the viewer (subject)
 * and the mode (write for the owner, read for a watcher), and expires. HMAC-SHA256 over the claims; the server secret never leaves the server.
 */
import { z } from "zod";
import type { LabSessionState } from "../db/generated/client";
import { signClaims, verifyClaims } from "../signed";
import { MAX_TAB_NUMBER, type TabView } from "./tab-names";

/**
 * Token lifetime: minutes, so a leaked token is soon worthless. It is checked at hello only; a
 * browser whose reconnect is refused (4401) fetches fresh tokens once (components/terminal/connection.ts).
 */
export const TERMINAL_TOKEN_TTL_MS = 10 * 60 * 1000;

export const TerminalClaims = z.object({
  /** Lab session id. */
  sid: z.string().min(1),
  /** Machine name. */
  m: z.string().min(1),
  /** Which shell of the machine (server/sessions/tabs.ts): absent for the first (#1), else its tab number. */
  n: z.number().int().min(2).max(MAX_TAB_NUMBER).optional(),
  mode: z.enum(["write", "read"]),
  /** Who the token was issued to. */
  sub: z.string().min(1),
  /** Expiry, ms since the epoch. */
  exp: z.number().int(),
});
export type TerminalClaims = z.infer<typeof TerminalClaims>;

export function signTerminalToken(secret: Buffer, claims: Omit<TerminalClaims, "exp">, now = Date.now()): string {
  return signClaims(secret, { ...claims, exp: now + TERMINAL_TOKEN_TTL_MS });
}

/** Returns the claims, or null for a token that is malformed, forged or expired. */
export function verifyTerminalToken(secret: Buffer, token: string, now = Date.now()): TerminalClaims | null {
  const claims = verifyClaims(secret, token, TerminalClaims);
  if (!claims || claims.exp <= now) return null;
  return claims;
}

/**
 * The mode of the tokens a viewer gets: write for the owner of a session still in use, read for a
 * watcher and for everyone once the session is ending or ended (its output can still be read;
 * nothing typed there would reach a machine that is going away) or its input is closed (an exam handed in).
 */
export function tokenMode(access: "owner" | "watch", state: LabSessionState, inputClosed = false): "write" | "read" {
  return access === "owner" && !inputClosed && state !== "ending" && state !== "ended" ? "write" : "read";
}

/** One token per machine of a session, all with the same mode, for `sub`. */
export function terminalTokens(
  secret: Buffer,
  sessionId: string,
  machines: readonly string[],
  mode: "write" | "read",
  sub: string,
): { name: string; token: string }[] {
  return machines.map((name) => ({ name, token: signTerminalToken(secret, { sid: sessionId, m: name, mode, sub }) }));
}

/** One token per extra tab (tabs.ts), all with the same mode, for `sub`. */
export function tabTokens(
  secret: Buffer,
  sessionId: string,
  tabs: readonly TabView[],
  mode: "write" | "read",
  sub: string,
): { machine: string; number: number; token: string }[] {
  return tabs.map(({ machine, number }) => ({
    machine,
    number,
    token: signTerminalToken(secret, { sid: sessionId, m: machine, n: number, mode, sub }),
  }));
}
