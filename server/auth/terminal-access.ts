/**
 * The terminal WebSocket's second check, after the token's signature: the socket's request must
 * carry a sign-in (better-auth's cookie) of the user the token was issued to, and that user must still be
 * allowed on the session (owner for write; owner or watcher for read). Revoked access or a
 * signed-out browser is refused on the next (re)connect even while the token is unexpired, and
 * an open socket is closed as soon as an access notice makes the gateway ask again ("recheck"):
 * then the refusal names what happened (RevokedReason) and an ended session closes with 4410.
 */
import type { IncomingMessage } from "node:http";
import type { Db } from "../db/client";
import type { TerminalAuthorizer } from "../terminal/gateway";
import { CloseCode, SessionOverReason } from "../terminal/protocol";
import type { Auth } from "./auth";
import { sessionAccess, taughtInEndedCohort, userFromHeaders } from "./guard";

export function terminalAuthorizer(auth: Auth, db: Db): TerminalAuthorizer {
  return async (request, claims, phase = "hello") => {
    const recheck = phase === "recheck";
    const user = await userFromHeaders(auth, requestHeaders(request));
    if (!user) return { code: CloseCode.unauthorized, reason: recheck ? "signedOut" : "not signed in" };
    if (user.id !== claims.sub) return { code: CloseCode.forbidden, reason: "this token belongs to someone else" };
    const access = await sessionAccess(db, user, claims.sid);
    if (!access) {
      const session = await db.labSession.findUnique({ where: { id: claims.sid }, select: { learnerId: true } });
      const ended = user.role === "instructor" && session !== null && (await taughtInEndedCohort(db, user.id, session.learnerId));
      if (ended) return { code: CloseCode.forbidden, reason: "cohortEnded" };
      return { code: CloseCode.forbidden, reason: recheck ? "accessRevoked" : "no access to this session" };
    }
    if (claims.mode === "write" && access !== "owner")
      return { code: CloseCode.forbidden, reason: recheck ? "accessRevoked" : "read-only access" };
    // An exam handed in: no more input, from any process (the hand-in publishes an access notice).
    if (claims.mode === "write" && (await db.labSession.count({ where: { id: claims.sid, inputClosedAt: { not: null } } })) > 0)
      return { code: CloseCode.forbidden, reason: "inputClosed" };
    if (recheck) {
      // The session may have ended on another process (a cohort ended there): say so, as its own terminals do.
      const session = await db.labSession.findUnique({ where: { id: claims.sid }, select: { state: true, endReason: true } });
      if (session?.state === "ended")
        return { code: CloseCode.sessionOver, reason: SessionOverReason.catch("admin").parse(session.endReason) };
    }
    return null;
  };
}

/** A Node request's headers as Fetch Headers (what better-auth reads the sign-in cookie from). */
export function requestHeaders(request: IncomingMessage): Headers {
  const headers = new Headers();
  for (const [name, value] of Object.entries(request.headers)) {
    if (value === undefined) continue;
    for (const v of Array.isArray(value) ? value : [value]) headers.append(name, v);
  }
  return headers;
}
