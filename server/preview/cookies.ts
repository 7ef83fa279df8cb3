/**
 * Cookies on a preview origin. A page served from a learner's machine may set cookies for the
 * parent preview domain (`Domain=<preview host>`) unless that domain is on the Public Suffix List;
 * the browser then sends them to every preview. So the proxy never trusts the first cookie of its
 * grant's name (a tossed one shadows the host-only grant): it tries every value, clears the
 * parent-domain one, and passes the machine only the page's own cookies, bounded in size.
 */

/** Cookie names that are Labdeck's on a preview origin (the grant, a sign-in): never sent to a machine. */
const LABDECK_COOKIE = /^(?:__Host-|__Secure-)?labdeck[-._]/i;

/** The most Cookie header bytes a machine is sent: 8 KiB, what common web servers take by default; beyond, it gets none. */
export const MACHINE_COOKIE_BYTES = 8 * 1024;

export interface Cookie {
  name: string;
  value: string;
}

/** Every cookie in a Cookie header, in order (a name may come several times: host-only and domain cookies). */
export function parseCookies(header: string | undefined): Cookie[] {
  const cookies: Cookie[] = [];
  for (const part of (header ?? "").split(";")) {
    const eq = part.indexOf("=");
    if (eq <= 0) continue;
    const name = part.slice(0, eq).trim();
    if (name) cookies.push({ name, value: part.slice(eq + 1).trim() });
  }
  return cookies;
}

/** Every value of one cookie name, in header order. */
export function cookieValues(header: string | undefined, name: string): string[] {
  return parseCookies(header)
    .filter((c) => c.name === name)
    .map((c) => c.value);
}

/**
 * The first value `verify` accepts, and whether another cookie of that name rode along (one that
 * does not verify here: tossed by a page for the parent domain, or another preview's grant).
 */
export function chooseGrant<T>(values: readonly string[], verify: (value: string) => T | null): { claims: T | null; shadowed: boolean } {
  let claims: T | null = null;
  let others = 0;
  for (const value of values) {
    const verified: T | null = claims === null ? verify(value) : null;
    if (verified !== null) claims = verified;
    else others++;
  }
  return { claims, shadowed: others > 0 };
}

/** The Set-Cookie that removes a cookie of this name set for the parent preview domain. */
export function clearParentCookie(name: string, parentHost: string): string {
  return `${name}=; Domain=${parentHost}; Path=/; Max-Age=0`;
}

/** The Cookie header a machine gets: the page's own cookies, none of Labdeck's; null when none, or over MACHINE_COOKIE_BYTES. */
export function machineCookieHeader(header: string | undefined): string | null {
  const own = parseCookies(header).filter((c) => !LABDECK_COOKIE.test(c.name));
  const joined = own.map((c) => `${c.name}=${c.value}`).join("; ");
  if (!joined || Buffer.byteLength(joined) > MACHINE_COOKIE_BYTES) return null;
  return joined;
}
