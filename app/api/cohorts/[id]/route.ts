/** One cohort: GET (admins, its instructors) with members and pending invitations; PUT edits it (admins; its limits reach its running sessions). */
import { requireRole } from "@/server/auth/guard";
import { requireCohortView } from "@/server/cohorts/access";
import { cohortRoute } from "@/server/compose/route";
import { cohortMembers, getCohortOrThrow, updateCohort } from "@/server/cohorts/cohorts";
import { jsonBody } from "@/server/http/route";

export const dynamic = "force-dynamic";

type Ctx = { params: Promise<{ id: string }> };

export const GET = cohortRoute<Ctx>(async (request, context, services) => {
  const user = await requireRole(services.auth, request.headers, "admin", "instructor");
  const { id } = await context.params;
  await requireCohortView(services.db, user, id);
  return Response.json({ cohort: await getCohortOrThrow(services.db, id), ...(await cohortMembers(services.db, id)) });
});

export const PUT = cohortRoute<Ctx>(async (request, context, services) => {
  const admin = await requireRole(services.auth, request.headers, "admin");
  const { id } = await context.params;
  const cohort = await updateCohort(services.db, services.labs, id, (await jsonBody(request)) as never, admin.id, {
    platformSessionMinutes: services.env.LABDECK_SESSION_MINUTES,
    bus: services.bus,
  });
  return Response.json({ cohort });
});
