/**
 * GET /api/sessions/:id/start — where a session's start is (server/sessions/start-progress.ts):
 * stage, the setup script running, the queue position, or why it failed. The lab page polls it
 * while it waits. The owner and watchers.
 */
import { requireSession, requireUser } from "@/server/auth/guard";
import { apiRoute } from "@/server/compose/route";
import { localeFromHeaders, storedText } from "@/server/i18n/locale";
import { startView } from "@/server/sessions/start-progress";

export const dynamic = "force-dynamic";

export const GET = apiRoute<{ params: Promise<{ id: string }> }>(async (request, context, services) => {
  const user = await requireUser(services.auth, request.headers);
  const { id } = await context.params;
  await requireSession(services.db, user, id, "watch");
  const view = await startView(services.db, id);
  // A failed start's reason in the reader's language (a refusal is stored as a key).
  const worded = view?.error ? { ...view, error: storedText(localeFromHeaders(request.headers), view.error) } : view;
  return Response.json(worded, { headers: { "cache-control": "no-store" } });
});
