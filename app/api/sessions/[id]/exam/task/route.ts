/**
 * POST /api/sessions/:id/exam/task { taskId } — the learner moved to a task: time per task and the
 * recording's task markers come from these. While the exam runs; 204.
 */
import { z } from "zod";
import { requireSession, requireUser } from "@/server/auth/guard";
import { apiRoute } from "@/server/compose/route";
import { switchTask } from "@/server/exams/attempts";
import { jsonBody } from "@/server/http/route";
import { sessionLabById } from "@/server/sessions/lab-versions";

export const dynamic = "force-dynamic";

const Body = z.strictObject({ taskId: z.string().min(1).max(64) });

export const POST = apiRoute<{ params: Promise<{ id: string }> }>(async (request, context, services) => {
  const user = await requireUser(services.auth, request.headers);
  const { id } = await context.params;
  await requireSession(services.db, user, id, "input");
  const { taskId } = Body.parse(await jsonBody(request));
  const { lab } = await sessionLabById(services.db, services.labs, id);
  await switchTask(services.db, lab, id, taskId);
  return new Response(null, { status: 204 });
});
