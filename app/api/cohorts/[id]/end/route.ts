/** POST ends the cohort: every live session of its learners ends and its machines are torn down. Admins. */
import { requireRole } from "@/server/auth/guard";
import { cohortRoute } from "@/server/compose/route";
import { endCohort } from "@/server/cohorts/cohorts";

export const dynamic = "force-dynamic";

export const POST = cohortRoute<{ params: Promise<{ id: string }> }>(async (request, context, services) => {
  const admin = await requireRole(services.auth, request.headers, "admin");
  const { id } = await context.params;
  return Response.json(await endCohort(services, id, admin.id));
});
