/** POST { minutes } gives a learner's live session more time before it expires. Admins. */
import { requireRole } from "@/server/auth/guard";
import { cohortRoute } from "@/server/compose/route";
import { extendSession } from "@/server/cohorts/cohorts";
import { jsonBody } from "@/server/http/route";

export const dynamic = "force-dynamic";

export const POST = cohortRoute<{ params: Promise<{ id: string }> }>(async (request, context, services) => {
  const admin = await requireRole(services.auth, request.headers, "admin");
  const { id } = await context.params;
  const { expiresAt } = await extendSession(services.db, id, (await jsonBody(request)) as never, admin.id, services.bus);
  return Response.json({ sessionId: id, expiresAt });
});
