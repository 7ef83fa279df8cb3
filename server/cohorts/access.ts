/**
 * Who may see a cohort: admins every cohort, instructors the cohorts they teach until it ends
 * (then 403 cohortEnded); anyone else gets 404 (a cohort they may not see looks like none). (The cohort domain's refusals become API errors in
 * server/compose/route.ts cohortRoute.)
 */
import type { CurrentUser } from "../auth/guard";
import { Denied } from "../denied";
import type { Db } from "../db/client";
import { CohortId } from "./cohorts";

export async function requireCohortView(db: Db, user: CurrentUser, cohortId: string): Promise<void> {
  if (!CohortId.safeParse(cohortId).success) throw new Denied(404, "noSuchCohort");
  const cohort = await db.cohort.findUnique({ where: { id: cohortId }, select: { id: true, endedAt: true } });
  if (!cohort) throw new Denied(404, "noSuchCohort");
  if (user.role === "admin") return;
  if (user.role === "instructor") {
    const member = await db.cohortMember.findUnique({ where: { cohortId_userId: { cohortId, userId: user.id } }, select: { role: true } });
    // An ended cohort is the admins' record; its instructors no longer see its learners' work.
    if (member?.role === "instructor") {
      if (cohort.endedAt) throw new Denied(403, "cohortEnded");
      return;
    }
  }
  throw new Denied(404, "noSuchCohort");
}
