/** POST adds an existing user to the cohort: assign an instructor, or add a learner who has an account (admins). */
import { requireRole } from "@/server/auth/guard";
import { cohortRoute } from "@/server/cohorts/access";
import { addMember } from "@/server/cohorts/cohorts";
import { jsonBody } from "@/server/http/route";

export const dynamic = "force-dynamic";

export const POST = cohortRoute<{ params: Promise<{ id: string }> }>(async (request, context, services) => {
  const admin = await requireRole(services.auth, request.headers, "admin");
  const { id } = await context.params;
  return Response.json({ member: await addMember(services.db, id, (await jsonBody(request)) as never, admin.id) }, { status: 201 });
});
