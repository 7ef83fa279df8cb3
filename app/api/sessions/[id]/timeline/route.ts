/** GET a session's check runs, oldest first (every run, background ones too): the owner and its watchers. */
import { requireSession, requireUser } from "@/server/auth/guard";
import { sessionTimeline } from "@/server/cohorts/dashboard";
import { apiRoute } from "@/server/compose/route";

export const dynamic = "force-dynamic";

export const GET = apiRoute<{ params: Promise<{ id: string }> }>(async (request, context, services) => {
  const user = await requireUser(services.auth, request.headers);
  const { id } = await context.params;
  await requireSession(services.db, user, id, "watch");
  return Response.json({ sessionId: id, runs: await sessionTimeline(services.db, id) });
});
