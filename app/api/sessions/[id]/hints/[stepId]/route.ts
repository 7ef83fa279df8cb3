/** POST /api/sessions/:id/hints/:stepId — reveal a step's hint (recorded) and return it; the owner only. */
import { requireSession, requireUser } from "@/server/auth/guard";
import { apiError } from "@/server/http/route";
import { apiRoute } from "@/server/compose/route";
import { sessionLabById } from "@/server/sessions/lab-versions";

export const dynamic = "force-dynamic";

export const POST = apiRoute<{ params: Promise<{ id: string; stepId: string }> }>(async (request, context, services) => {
  const user = await requireUser(services.auth, request.headers);
  const { id, stepId } = await context.params;
  const session = await requireSession(services.db, user, id, "input");
  services.sweeper.activity(id);
  // The hint of the session's own lab version.
  const { lab } = await sessionLabById(services.db, services.labs, session.id);
  const step = lab.steps.find((s) => s.id === stepId);
  // An exam gives no hints (its solutions come with the result).
  if (!step || lab.manifest.mode === "exam") return apiError(request, 404, "noSuchStep");
  const progress = await services.grader.progress(id);
  if (progress.steps.find((s) => s.id === stepId)?.state === "locked") return apiError(request, 403, "stepLocked");
  await services.db.hintReveal.upsert({
    where: { sessionId_stepId: { sessionId: id, stepId } },
    create: { sessionId: id, stepId },
    update: {},
  });
  await services.bus.publishProgress(id);
  return Response.json({ hint: step.hintMarkdown });
});
