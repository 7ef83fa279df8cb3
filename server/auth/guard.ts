/**
 * Authorization: who the caller is and what they may touch. Plain functions over the database
 * and better-auth; route handlers, pages, server actions and the terminal WebSocket all decide
 * here, nowhere else.
 *
 * Rules:
 * - learners: their own lab sessions (owner: use, type, check, hints);
 * - instructors: their own sessions, and watch (read-only) sessions of learners in a live cohort
 *   they teach (once the cohort ends: 403 cohortEnded);
 * - admins: their own sessions, watch every session, and the admin pages/APIs.
 */
import type { Db } from "../db/client";
import type { LabSessionState } from "../db/generated/client";
import type { Auth, Role } from "./auth";
import { Denied } from "../denied";

export interface CurrentUser {
  id: string;
  email: string;
  name: string;
  role: Role;
}

/** What a user may do with one lab session: use it (owner), watch it read-only, or nothing. */
export type SessionAccess = "owner" | "watch" | null;

/** The signed-in user of a request (its sign-in cookie, read by better-auth), or null. */
export async function userFromHeaders(auth: Auth, headers: Headers): Promise<CurrentUser | null> {
  const result = await auth.api.getSession({ headers }).catch(() => null);
  if (!result) return null;
  const { id, email, name, role } = result.user as { id: string; email: string; name: string; role?: string };
  return { id, email, name, role: isRole(role) ? role : "learner" };
}

/** The signed-in user, or throws Denied(401). */
export async function requireUser(auth: Auth, headers: Headers): Promise<CurrentUser> {
  const user = await userFromHeaders(auth, headers);
  if (!user) throw new Denied(401, "notSignedIn");
  return user;
}

/** The signed-in user if they have one of `roles`; throws Denied(401) or Denied(403). */
export async function requireRole(auth: Auth, headers: Headers, ...roles: Role[]): Promise<CurrentUser> {
  const user = await requireUser(auth, headers);
  if (!roles.includes(user.role)) throw new Denied(403, "forbidden");
  return user;
}

/** Whether `instructorId` teaches a live (not ended) cohort that `learnerId` is a learner in. */
export async function teaches(db: Db, instructorId: string, learnerId: string): Promise<boolean> {
  return (await sharedCohort(db, instructorId, learnerId, "live")) !== null;
}

/**
 * Whether `instructorId` taught `learnerId` only in cohorts that have ended: such an instructor
 * knows the sessions exist, so they get 403 `cohortEnded` rather than the 404 of a stranger.
 */
export async function taughtInEndedCohort(db: Db, instructorId: string, learnerId: string): Promise<boolean> {
  return (await sharedCohort(db, instructorId, learnerId, "ended")) !== null;
}

function sharedCohort(db: Db, instructorId: string, learnerId: string, which: "live" | "ended") {
  return db.cohortMember.findFirst({
    where: {
      userId: learnerId,
      role: "learner",
      cohort: { endedAt: which === "live" ? null : { not: null }, members: { some: { userId: instructorId, role: "instructor" } } },
    },
    select: { cohortId: true },
  });
}

/** What `user` may do with lab session `sessionId` (null also when there is no such session). */
export async function sessionAccess(db: Db, user: CurrentUser, sessionId: string): Promise<SessionAccess> {
  const session = await db.labSession.findUnique({ where: { id: sessionId }, select: { learnerId: true } });
  if (!session) return null;
  return accessTo(db, user, session.learnerId);
}

/** What `user` may do with a session owned by `learnerId`. */
export async function accessTo(db: Db, user: CurrentUser, learnerId: string): Promise<SessionAccess> {
  if (learnerId === user.id) return "owner";
  if (user.role === "admin") return "watch";
  if (user.role === "instructor" && (await teaches(db, user.id, learnerId))) return "watch";
  return null;
}

/**
 * The session if `user` has at least `need` on it. No access at all answers 404 (someone
 * else's session looks like no session, so ids cannot be probed); a watcher asking for an
 * owner's action gets 403.
 */
export async function requireSession(
  db: Db,
  user: CurrentUser,
  sessionId: string,
  need: "owner" | "watch" | "input",
): Promise<{ id: string; labSlug: string; learnerId: string; state: LabSessionState; access: "owner" | "watch"; inputClosed: boolean }> {
  const row = await db.labSession.findUnique({
    where: { id: sessionId },
    select: { id: true, labSlug: true, learnerId: true, state: true, inputClosedAt: true },
  });
  const session = row && {
    id: row.id,
    labSlug: row.labSlug,
    learnerId: row.learnerId,
    state: row.state,
    inputClosed: row.inputClosedAt !== null,
  };
  const access = session ? await accessTo(db, user, session.learnerId) : null;
  if (session && !access && user.role === "instructor" && (await taughtInEndedCohort(db, user.id, session.learnerId)))
    throw new Denied(403, "cohortEnded");
  if (!session || !access) throw new Denied(404, "noSuchSession");
  if (need !== "watch" && access !== "owner") throw new Denied(403, "ownerOnly");
  // "input": the learner acts on the machines; an exam handed in takes nothing more.
  if (need === "input" && session.inputClosed) throw new Denied(409, "inputClosed");
  return { ...session, access };
}

export function isRole(value: unknown): value is Role {
  return value === "learner" || value === "instructor" || value === "admin";
}
