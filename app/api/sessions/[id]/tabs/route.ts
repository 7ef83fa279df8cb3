/**
 * POST /api/sessions/:id/tabs { machine } — opens another shell on a machine of the caller's own
 * session (`node01 #2`, server/sessions/tabs.ts): answers its number and a write token. The owner
 * only; 409 tooManyShells when the machine already has MAX_SHELLS_PER_MACHINE.
 */
import { z } from "zod";
import { requireSession, requireUser } from "@/server/auth/guard";
import { jsonBody } from "@/server/http/route";
import { apiRoute } from "@/server/compose/route";
import { MachineName } from "@/server/labs/schema";
import { openTab } from "@/server/sessions/tabs";
import { tabTokens } from "@/server/terminal/token";

export const dynamic = "force-dynamic";

const Body = z.object({ machine: MachineName });

export const POST = apiRoute<{ params: Promise<{ id: string }> }>(async (request, context, services) => {
  const user = await requireUser(services.auth, request.headers);
  const { id } = await context.params;
  await requireSession(services.db, user, id, "input");
  const { machine } = Body.parse(await jsonBody(request));
  const tab = await openTab(services.db, id, machine);
  services.sweeper.activity(id);
  await services.bus.publishTabs(id);
  return Response.json(tabTokens(services.secret, id, [tab], "write", user.id)[0], { status: 201 });
});
