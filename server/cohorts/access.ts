/**
 * Who may see a cohort: admins every cohort, instructors the cohorts they teach until it ends
 * (then 403 cohortEnded); anyone else gets 404 (a cohort they may not see looks like none). Cohort refusals from the domain become API
 * errors here, so route handlers stay one call each.
 */
import type { CurrentUser } from "../auth/guard";
import { Denied } from "../auth/guard";
import type { Db } from "../db/client";
import { apiError, apiRoute } from "../http/route";
import type { Services } from "../services";
import { CohortId, CohortNotFoundError, CohortRuleError, MemberNotFoundError } from "./cohorts";

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

/** apiRoute plus the cohort domain's refusals (404 no such cohort; 404/409/422 rule errors). */
export function cohortRoute<C>(handler: (request: Request, context: C, services: Services) => Promise<Response>) {
  return apiRoute<C>(async (request, context, services) => {
    try {
      return await handler(request, context, services);
    } catch (error) {
      if (error instanceof CohortNotFoundError) return apiError(request, 404, "noSuchCohort");
      if (error instanceof CohortRuleError) return apiError(request, error.status, error.code);
      if (error instanceof MemberNotFoundError) return apiError(request, 404, "noSuchMember");
      throw error;
    }
  });
}
