/**
 * POST /api/sessions/:id/machines/:name/reset — puts the caller's machine back to the lab's start
 * (the state saved after the lab's setup, or a fresh disk and the lab's setup for it); answers when
 * it is ready. Steps done stay done. The
 * owner only.
 */
import { requireSession, requireUser } from "@/server/auth/guard";
import { apiError } from "@/server/http/route";
import { apiRoute } from "@/server/compose/route";
import { runLabSetup } from "@/server/labs/setup";
import { machineEndpoint, resetMachine } from "@/server/sessions/lab-sessions";
import { sessionLabById } from "@/server/sessions/lab-versions";

export const dynamic = "force-dynamic";

export const POST = apiRoute<{ params: Promise<{ id: string; name: string }> }>(async (request, context, services) => {
  const user = await requireUser(services.auth, request.headers);
  const { id, name } = await context.params;
  const session = await requireSession(services.db, user, id, "input");
  services.sweeper.activity(id);
  if (!services.provider.reset) return apiError(request, 501, "machineActionUnsupported");
  // The setup of the session's own lab version.
  const { lab } = await sessionLabById(services.db, services.labs, session.id);
  // Every process's terminals into the machine wait for the reset instead of retrying through it,
  // and connect once after; terminals and check connections from before are dead after it.
  await services.bus.publishMachineResetting(id, name);
  let done: boolean;
  try {
    done = await resetMachine(services.db, services.provider, id, name, () =>
      runLabSetup(services.pool, lab, (machine) => machineEndpoint(services.db, id, machine), [name]),
    );
  } finally {
    await services.bus.publishMachineRestored(id, name);
  }
  if (!done) return apiError(request, 404, "noSuchMachine");
  return Response.json({ ok: true });
});
