/**
 * GET /api/sessions/:id/exam/result — a scored exam: total, pass mark, per task the points, each
 * check's verdict and output now and after the reboot, the solution, time spent. The owner and
 * those who may watch the session. 409 with the state until it is scored.
 */
import { requireSession, requireUser } from "@/server/auth/guard";
import { apiRoute } from "@/server/compose/route";
import { examResult } from "@/server/exams/result";
import { apiError } from "@/server/http/route";
import { sessionLabById } from "@/server/sessions/lab-versions";

export const dynamic = "force-dynamic";

export const GET = apiRoute<{ params: Promise<{ id: string }> }>(async (request, context, services) => {
  const user = await requireUser(services.auth, request.headers);
  const { id } = await context.params;
  await requireSession(services.db, user, id, "watch");
  const attempt = await services.db.examAttempt.findUnique({ where: { sessionId: id }, select: { state: true } });
  if (attempt && attempt.state !== "scored") return apiError(request, 409, "examNotScored", { state: attempt.state });
  const { lab } = await sessionLabById(services.db, services.labs, id);
  return Response.json(await examResult(services.db, lab, id));
});
