/**
 * POST /api/sessions/:id/exam/submit — the learner hands the exam in: input closes on every
 * process (terminals become read-only) and the scoring starts; 202. 409 unless it runs.
 */
import { requireSession, requireUser } from "@/server/auth/guard";
import { apiRoute } from "@/server/compose/route";
import { submitExam } from "@/server/exams/attempts";

export const dynamic = "force-dynamic";

export const POST = apiRoute<{ params: Promise<{ id: string }> }>(async (request, context, services) => {
  const user = await requireUser(services.auth, request.headers);
  const { id } = await context.params;
  await requireSession(services.db, user, id, "input");
  const learnerId = await submitExam(services.db, id);
  // Every process re-decides this learner's sockets: write sockets of this session close (inputClosed).
  await services.bus.publishAccessChange(learnerId);
  await services.bus.publishSessionChange(id);
  // Scored here at once if nobody else claims it first (the scorer's tick would, within seconds).
  void services.exams.tick();
  return Response.json({ state: "scoring" }, { status: 202 });
});
