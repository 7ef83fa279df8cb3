/**
 * GET /api/sessions/:id/exam — the exam page's view of a session's exam while it runs: tasks,
 * the server's deadline and clock, the learner's own marks; never a check result. The learner's
 * first GET with the machines ready starts the clock. The owner and
 * those who may watch the session; 404 for a session that is no exam.
 */
import { requireSession, requireUser } from "@/server/auth/guard";
import { apiRoute } from "@/server/compose/route";
import { examView } from "@/server/exams/attempts";
import { sessionLabById } from "@/server/sessions/lab-versions";

export const dynamic = "force-dynamic";

export const GET = apiRoute<{ params: Promise<{ id: string }> }>(async (request, context, services) => {
  const user = await requireUser(services.auth, request.headers);
  const { id } = await context.params;
  const session = await requireSession(services.db, user, id, "watch");
  const { lab } = await sessionLabById(services.db, services.labs, id);
  return Response.json(await examView(services.db, lab, id, session.access));
});
