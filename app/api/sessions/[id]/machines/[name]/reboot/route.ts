/**
 * POST /api/sessions/:id/machines/:name/reboot — "reboot and verify": a clean reboot of the
 * caller's running machine (systemctl reboot over SSH); answers once the machine accepted it. The
 * grader sees the new boot when SSH is back and re-checks a step waiting for its reboot proof.
 * The owner only; rate-limited per user. Only where the provider manages the machines' power
 * (QEMU): elsewhere the learner reboots from the terminal, and the button is not offered (501).
 */
import { requireSession, requireUser } from "@/server/auth/guard";
import { apiError, tooManyRequests } from "@/server/http/route";
import { apiRoute } from "@/server/compose/route";
import { consume } from "@/server/throttle";
import { requestReboot } from "@/server/sessions/lab-sessions";

export const dynamic = "force-dynamic";

export const POST = apiRoute<{ params: Promise<{ id: string; name: string }> }>(async (request, context, services) => {
  const user = await requireUser(services.auth, request.headers);
  const { id, name } = await context.params;
  await requireSession(services.db, user, id, "input");
  const wait = await consume(services.db, "machineReboot", user.id);
  if (wait) return tooManyRequests(request, wait);
  services.sweeper.activity(id);
  if (!services.provider.reboot) return apiError(request, 501, "machineActionUnsupported");
  if (!(await requestReboot(services.db, services.pool, id, name))) return apiError(request, 404, "noSuchMachine");
  return Response.json({ ok: true });
});
