/**
 * Signed claims: `<base64url JSON>.<base64url HMAC-SHA256>` under a server-side key, parsed with
 * a zod schema on the way back. Terminal tokens (terminal/token.ts) and web-preview codes and
 * grants (preview/grant.ts) are such values, each under its own key.
 */
import { createHmac, timingSafeEqual } from "node:crypto";
import type { z } from "zod";

/** Longest signed value read, characters: anything longer is refused before any work. */
const MAX_SIGNED_CHARS = 4096;

function mac(key: Buffer, body: string): string {
  return createHmac("sha256", key).update(body).digest("base64url");
}

/** `claims` signed under `key`. */
export function signClaims(key: Buffer, claims: object): string {
  const body = Buffer.from(JSON.stringify(claims)).toString("base64url");
  return `${body}.${mac(key, body)}`;
}

/** The claims of a value signed under `key` that `schema` accepts, or null (malformed, forged, too long, not of the schema). */
export function verifyClaims<T>(key: Buffer, value: string, schema: z.ZodType<T>): T | null {
  if (value.length > MAX_SIGNED_CHARS) return null;
  const [body, signature, extra] = value.split(".");
  if (!body || !signature || extra !== undefined) return null;
  const expected = Buffer.from(mac(key, body));
  const given = Buffer.from(signature);
  if (expected.length !== given.length || !timingSafeEqual(expected, given)) return null;
  let raw: unknown;
  try {
    raw = JSON.parse(Buffer.from(body, "base64url").toString("utf8"));
  } catch {
    return null;
  }
  const parsed = schema.safeParse(raw);
  return parsed.success ? parsed.data : null;
}
