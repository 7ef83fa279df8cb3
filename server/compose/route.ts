/**
 * The API route wrappers app/api handlers use: server/http/route.ts's wrapper over this process's
 * services, and cohortRoute for the cohort domain's refusals.
 */
import { publicUrl } from "../config";
import { CohortNotFoundError, CohortRuleError, MemberNotFoundError } from "../cohorts/cohorts";
import { originOf } from "../http/guard";
import { apiError, routeWith } from "../http/route";
import { getServicesOrThrow, type Services } from "./services";

export const apiRoute = routeWith<Services>(() => {
  const services = getServicesOrThrow();
  return { services, publicOrigin: originOf(publicUrl(services.env)) };
});

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
