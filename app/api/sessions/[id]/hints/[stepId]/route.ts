/** POST /api/sessions/:id/hints/:stepId — reveal a step's hint (recorded) and return it. */
import { NextResponse } from "next/server";
import { ownedSessionOr } from "@/server/http/learner";
import { getServicesOrThrow } from "@/server/services";

export const dynamic = "force-dynamic";

export async function POST(_request: Request, context: { params: Promise<{ id: string; stepId: string }> }) {
  const { id, stepId } = await context.params;
  const services = getServicesOrThrow();
  const owned = await ownedSessionOr(services, id);
  if (owned.response) return owned.response;
  services.sweeper.activity(owned.session.id);
  const lab = await services.labs.get(owned.session.labSlug);
  const step = lab.steps.find((s) => s.id === stepId);
  if (!step) return NextResponse.json({ error: "no such step" }, { status: 404 });
  const progress = await services.grader.progress(id);
  if (progress.steps.find((s) => s.id === stepId)?.state === "locked") {
    return NextResponse.json({ error: "this step is not unlocked yet" }, { status: 403 });
  }
  await services.db.hintReveal.upsert({
    where: { sessionId_stepId: { sessionId: id, stepId } },
    create: { sessionId: id, stepId },
    update: {},
  });
  services.bus.publishProgress(await services.grader.progress(id));
  return NextResponse.json({ hint: step.hintMarkdown });
}
