/**
 * DELETE /api/sessions/:id/tabs/:machine/:number — closes an extra shell of the caller's own
 * session: the tab is closed for every window and process (a `tabs` notice), its shell is hung
 * up in the machine's holder and its sockets close with 4410 `tabClosed`. The first shell of a
 * machine (#1) is not a tab and cannot be closed. The owner only; 404 for a tab that is not open.
 */
import { z } from "zod";
import { requireSession, requireUser } from "@/server/auth/guard";
import { Denied } from "@/server/denied";
import { apiRoute } from "@/server/compose/route";
import { MachineName } from "@/server/labs/schema";
import { log } from "@/server/log";
import { machineEndpoint } from "@/server/sessions/lab-sessions";
import { MAX_TAB_NUMBER } from "@/server/terminal/tab-names";
import { closeTab } from "@/server/sessions/tabs";

export const dynamic = "force-dynamic";

const Params = z.object({ machine: MachineName, number: z.coerce.number().int().min(2).max(MAX_TAB_NUMBER) });

export const DELETE = apiRoute<{ params: Promise<{ id: string; machine: string; number: string }> }>(async (request, context, services) => {
  const user = await requireUser(services.auth, request.headers);
  const raw = await context.params;
  await requireSession(services.db, user, raw.id, "input");
  const parsed = Params.safeParse(raw);
  if (!parsed.success) throw new Denied(404, "noSuchTab");
  const { machine, number } = parsed.data;
  if (!(await closeTab(services.db, raw.id, machine, number))) throw new Denied(404, "noSuchTab");
  services.sweeper.activity(raw.id);
  await services.bus.publishTabs(raw.id);
  // The shell ends now whichever process had it open; a machine that cannot be reached keeps it
  // until its holder restarts (the tab is closed either way: nobody can attach to it again).
  const endpoint = await machineEndpoint(services.db, raw.id, machine);
  await services.terminals
    .closeTab(raw.id, machine, number, endpoint)
    .catch((error: Error) => log.warn({ err: error.message, machine, number }, "closed tab's shell not hung up"));
  return Response.json({ ok: true });
});
