/**
 * Who may replay a lab session's recordings: its learner, admins, and instructors of a cohort
 * that is not ended and has the learner and the session's lab. Anyone else gets 404, exactly like
 * a session that does not exist (server/auth/guard.ts).
 */
import { requireSession, type CurrentUser } from "../auth/guard";
import { Denied } from "../denied";
import type { Db } from "../db/client";

export async function requireRecordingAccess(
  db: Db,
  user: CurrentUser,
  sessionId: string,
): Promise<{ id: string; labSlug: string; learnerId: string; access: "owner" | "watch" }> {
  const session = await requireSession(db, user, sessionId, "watch");
  if (session.access === "owner" || user.role === "admin") return session;
  const cohort = await db.cohort.findFirst({
    where: {
      endedAt: null,
      labs: { has: session.labSlug },
      AND: [
        { members: { some: { userId: user.id, role: "instructor" } } },
        { members: { some: { userId: session.learnerId, role: "learner" } } },
      ],
    },
    select: { id: true },
  });
  if (!cohort) throw new Denied(404, "noSuchSession");
  return session;
}
