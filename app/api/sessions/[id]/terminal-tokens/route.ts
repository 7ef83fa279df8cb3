/**
 * GET /api/sessions/:id/terminal-tokens — terminal tokens for a session the caller may open:
 * write tokens for its owner, read-only tokens for a watcher (an admin, or an instructor of the
 * learner's cohort) and for a session that is ending or ended (tokenMode); one per machine (its first shell) and one per open extra tab (`tabs`).
 * 404 for anyone else.
 */
import { requireSession, requireUser } from "@/server/auth/guard";
import { apiRoute } from "@/server/compose/route";
import { openTabs } from "@/server/sessions/tabs";
import { tabTokens, terminalTokens, tokenMode } from "@/server/terminal/token";

export const dynamic = "force-dynamic";

export const GET = apiRoute<{ params: Promise<{ id: string }> }>(async (request, context, services) => {
  const user = await requireUser(services.auth, request.headers);
  const { id } = await context.params;
  const session = await requireSession(services.db, user, id, "watch");
  const machines = await services.db.machine.findMany({ where: { sessionId: id }, select: { name: true }, orderBy: { name: "asc" } });
  const mode = tokenMode(session.access, session.state, session.inputClosed);
  return Response.json({
    sessionId: id,
    mode,
    machines: terminalTokens(
      services.secret,
      id,
      machines.map((m) => m.name),
      mode,
      user.id,
    ),
    tabs: tabTokens(services.secret, id, await openTabs(services.db, id), mode, user.id),
  });
});
