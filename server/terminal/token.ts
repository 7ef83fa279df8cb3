/**
 * Terminal tokens: what a browser presents in `hello`. A token names one machine of one lab
 * session, the viewer (subject) and the mode (write for the owner, read for a watcher), and
 * expires. HMAC-SHA256 over the claims; the server secret never leaves the server.
 */
import { createHmac, timingSafeEqual } from "node:crypto";
import { z } from "zod";

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
  mode: z.enum(["write", "read"]),
  /** Who the token was issued to. */
  sub: z.string().min(1),
  /** Expiry, ms since the epoch. */
  exp: z.number().int(),
});
export type TerminalClaims = z.infer<typeof TerminalClaims>;

export function signTerminalToken(secret: Buffer, claims: Omit<TerminalClaims, "exp">, now = Date.now()): string {
  const body = Buffer.from(JSON.stringify({ ...claims, exp: now + TERMINAL_TOKEN_TTL_MS })).toString("base64url");
  return `${body}.${mac(secret, body)}`;
}

/** Returns the claims, or null for a token that is malformed, forged or expired. */
export function verifyTerminalToken(secret: Buffer, token: string, now = Date.now()): TerminalClaims | null {
  const [body, signature, extra] = token.split(".");
  if (!body || !signature || extra !== undefined) return null;
  const expected = Buffer.from(mac(secret, body));
  const given = Buffer.from(signature);
  if (expected.length !== given.length || !timingSafeEqual(expected, given)) return null;
  let raw: unknown;
  try {
    raw = JSON.parse(Buffer.from(body, "base64url").toString("utf8"));
  } catch {
    return null;
  }
  const claims = TerminalClaims.safeParse(raw);
  if (!claims.success || claims.data.exp <= now) return null;
  return claims.data;
}

function mac(secret: Buffer, body: string): string {
  return createHmac("sha256", secret).update(body).digest("base64url");
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
