/** PUT /api/sessions/:id/exam/marks { taskId, flagged?, done? } — the learner's own marks on a task, while the exam runs. */
import { z } from "zod";
import { requireSession, requireUser } from "@/server/auth/guard";
import { apiRoute } from "@/server/compose/route";
import { setMark } from "@/server/exams/attempts";
import { jsonBody } from "@/server/http/route";
import { sessionLabById } from "@/server/sessions/lab-versions";

export const dynamic = "force-dynamic";

const Body = z.strictObject({ taskId: z.string().min(1).max(64), flagged: z.boolean().optional(), done: z.boolean().optional() });

export const PUT = apiRoute<{ params: Promise<{ id: string }> }>(async (request, context, services) => {
  const user = await requireUser(services.auth, request.headers);
  const { id } = await context.params;
  await requireSession(services.db, user, id, "input");
  const { taskId, ...mark } = Body.parse(await jsonBody(request));
  const { lab } = await sessionLabById(services.db, services.labs, id);
  return Response.json({ marks: await setMark(services.db, lab, id, taskId, mark) });
});
