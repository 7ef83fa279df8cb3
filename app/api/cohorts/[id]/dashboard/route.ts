/** GET the instructor dashboard's data for a cohort (?lab=<slug>, default its first lab): admins and its instructors. */
import { requireRole } from "@/server/auth/guard";
import { requireCohortView } from "@/server/cohorts/access";
import { cohortRoute } from "@/server/compose/route";
import { cohortDashboard } from "@/server/cohorts/dashboard";

export const dynamic = "force-dynamic";

export const GET = cohortRoute<{ params: Promise<{ id: string }> }>(async (request, context, services) => {
  const user = await requireRole(services.auth, request.headers, "admin", "instructor");
  const { id } = await context.params;
  await requireCohortView(services.db, user, id);
  const lab = new URL(request.url).searchParams.get("lab") ?? undefined;
  return Response.json(await cohortDashboard(services.db, services.labs, id, lab));
});
