/**
 * POST /api/sessions/:id/machines/:name/start — powers the caller's machine on again after a
 * poweroff or crash (a hard reset when it runs); answers when it takes SSH again. The owner only.
 */
import { requireSession, requireUser } from "@/server/auth/guard";
import { apiError } from "@/server/http/route";
import { apiRoute } from "@/server/compose/route";
import { restartMachine } from "@/server/sessions/lab-sessions";

export const dynamic = "force-dynamic";

export const POST = apiRoute<{ params: Promise<{ id: string; name: string }> }>(async (request, context, services) => {
  const user = await requireUser(services.auth, request.headers);
  const { id, name } = await context.params;
  await requireSession(services.db, user, id, "input");
  services.sweeper.activity(id);
  if (!services.provider.reboot) return apiError(request, 501, "machineActionUnsupported");
  if (!(await restartMachine(services.db, services.provider, id, name))) return apiError(request, 404, "noSuchMachine");
  return Response.json({ ok: true });
});
