/** Cohorts: GET lists them (admins: all; instructors: the ones they teach); POST makes one (admins). */
import { requireRole } from "@/server/auth/guard";
import { cohortRoute } from "@/server/compose/route";
import { createCohort, listCohorts } from "@/server/cohorts/cohorts";
import { jsonBody } from "@/server/http/route";

export const dynamic = "force-dynamic";

export const GET = cohortRoute<unknown>(async (request, _context, services) => {
  const user = await requireRole(services.auth, request.headers, "admin", "instructor");
  return Response.json({ cohorts: await listCohorts(services.db, user.role === "admin" ? {} : { instructorId: user.id }) });
});

export const POST = cohortRoute<unknown>(async (request, _context, services) => {
  const admin = await requireRole(services.auth, request.headers, "admin");
  const cohort = await createCohort(services.db, services.labs, (await jsonBody(request)) as never, admin.id);
  return Response.json({ cohort }, { status: 201 });
});
