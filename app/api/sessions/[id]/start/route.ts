/**
 * GET /api/sessions/:id/start — where a session's start is (server/sessions/start-progress.ts):
 * stage, the setup script running, the queue position, or why it failed. The lab page polls it
 * while it waits. The owner and watchers.
 */
import { requireSession, requireUser } from "@/server/auth/guard";
import { apiRoute } from "@/server/compose/route";
import { startView } from "@/server/sessions/start-progress";

export const dynamic = "force-dynamic";

export const GET = apiRoute<{ params: Promise<{ id: string }> }>(async (request, context, services) => {
  const user = await requireUser(services.auth, request.headers);
  const { id } = await context.params;
  await requireSession(services.db, user, id, "watch");
  const view = await startView(services.db, id);
  return Response.json(view, { headers: { "cache-control": "no-store" } });
});
