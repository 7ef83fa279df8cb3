/** DELETE removes a member (learner or instructor) from the cohort, audited (admins); 404 when not a member. Their live sockets and streams that relied on it close. */
import { requireRole } from "@/server/auth/guard";
import { cohortRoute } from "@/server/compose/route";
import { removeMember } from "@/server/cohorts/cohorts";

export const dynamic = "force-dynamic";

export const DELETE = cohortRoute<{ params: Promise<{ id: string; userId: string }> }>(async (request, context, services) => {
  const admin = await requireRole(services.auth, request.headers, "admin");
  const { id, userId } = await context.params;
  return Response.json({ removed: await removeMember(services.db, id, userId, admin.id, services.bus) });
});
