/**
 * The terminal WebSocket's second check, after the token's signature: the socket's request must
 * carry a better-auth session of the user the token was issued to, and that user must still be
 * allowed on the session (owner for write; owner or watcher for read). Revoked access or a
 * signed-out browser is refused on the next (re)connect even while the token is unexpired.
 */
import type { IncomingMessage } from "node:http";
import type { Db } from "../db/client";
import type { TerminalAuthorizer } from "../terminal/gateway";
import { CloseCode } from "../terminal/protocol";
import type { Auth } from "./auth";
import { sessionAccess, userFromHeaders } from "./guard";

export function terminalAuthorizer(auth: Auth, db: Db): TerminalAuthorizer {
  return async (request, claims) => {
    const user = await userFromHeaders(auth, requestHeaders(request));
    if (!user) return { code: CloseCode.unauthorized, reason: "not signed in" };
    if (user.id !== claims.sub) return { code: CloseCode.forbidden, reason: "this token belongs to someone else" };
    const access = await sessionAccess(db, user, claims.sid);
    if (!access) return { code: CloseCode.forbidden, reason: "no access to this session" };
    if (claims.mode === "write" && access !== "owner") return { code: CloseCode.forbidden, reason: "read-only access" };
    return null;
  };
}

/** A Node request's headers as Fetch Headers (what better-auth reads the session cookie from). */
export function requestHeaders(request: IncomingMessage): Headers {
  const headers = new Headers();
  for (const [name, value] of Object.entries(request.headers)) {
    if (value === undefined) continue;
    for (const v of Array.isArray(value) ? value : [value]) headers.append(name, v);
  }
  return headers;
}
