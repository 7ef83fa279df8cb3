/**
 * How a preview origin knows who is there. Labdeck's sign-in cookie is host-only on Labdeck's own
 * host and never reaches a preview origin, so Labdeck hands the browser a short-lived signed
 * **code** in a redirect (GET /api/sessions/:id/preview → 303 to `<preview origin>/__labdeck/enter?code=…`);
 * the preview origin exchanges it for a **grant** cookie scoped to that one host. Both are
 * HMAC-SHA256 over their claims with a key derived from the platform secret, and name the
 * target (session, machine, port), the user, the sign-in they came from and the access
 * (owner or watch). Each request is still authorized against the database (proxy.ts): a grant
 * outlives neither the sign-in, nor the access, nor the lab session.
 */
import { createHmac } from "node:crypto";
import { z } from "zod";
import type { PreviewTarget } from "./address";
import { signClaims, verifyClaims } from "../signed";

/** An entry code is good for this long: only the redirect that carries it needs it. */
export const PREVIEW_CODE_TTL_MS = 60_000;
/** A grant cookie lives this long at most (a working day); the sign-in ending ends it sooner. */
export const PREVIEW_GRANT_TTL_MS = 12 * 60 * 60_000;

/** Path prefix the preview origin keeps for itself (never proxied to the machine). */
export const PREVIEW_RESERVED_PREFIX = "/__labdeck/";
export const PREVIEW_ENTER_PATH = "/__labdeck/enter";

const Claims = z.object({
  /** "code" (in the entry redirect) or "grant" (the cookie): one never passes for the other. */
  k: z.enum(["code", "grant"]),
  sid: z.string().min(1).max(64),
  m: z.string().min(1).max(64),
  p: z.number().int().min(1).max(65535),
  /** User id. */
  sub: z.string().min(1).max(200),
  /** The better-auth sign-in (Session row id) the code was minted under. */
  si: z.string().min(1).max(200),
  access: z.enum(["owner", "watch"]),
  /** Code only: the path to open after the exchange. */
  next: z.string().max(2048).optional(),
  exp: z.number().int(),
});
export type PreviewClaims = z.infer<typeof Claims>;

function previewKey(secret: Buffer): Buffer {
  return createHmac("sha256", secret).update("labdeck:preview-grant:v1").digest();
}

export function signPreview(secret: Buffer, claims: Omit<PreviewClaims, "exp">, now = Date.now()): string {
  const ttl = claims.k === "code" ? PREVIEW_CODE_TTL_MS : PREVIEW_GRANT_TTL_MS;
  return signClaims(previewKey(secret), { ...claims, exp: now + ttl });
}

/** The claims of a code or grant of kind `kind` for `target`, or null (malformed, forged, expired, another target). */
export function verifyPreview(
  secret: Buffer,
  kind: "code" | "grant",
  value: string,
  target: PreviewTarget,
  now = Date.now(),
): PreviewClaims | null {
  const c = verifyClaims(previewKey(secret), value, Claims);
  if (!c) return null;
  if (c.k !== kind || c.exp <= now) return null;
  if (c.sid !== target.sessionId || c.m !== target.machine || c.p !== target.port) return null;
  return c;
}

/** The grant cookie's name: `__Host-` on https (Secure, host-only, Path=/ enforced by the browser). */
export function grantCookieName(scheme: "http" | "https"): string {
  return scheme === "https" ? "__Host-labdeck-preview" : "labdeck-preview";
}
