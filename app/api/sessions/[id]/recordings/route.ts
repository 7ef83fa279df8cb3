/** GET the session's terminal recordings (one per machine) and its step markers: the learner, instructors of its live cohort, admins. */
import { requireUser } from "@/server/auth/guard";
import { markerLabel, sessionMarkers } from "@/server/recordings/asciicast";
import { requireRecordingAccess } from "@/server/recordings/access";
import { apiRoute } from "@/server/compose/route";
import { sessionLabById } from "@/server/sessions/lab-versions";

export const dynamic = "force-dynamic";

export const GET = apiRoute<{ params: Promise<{ id: string }> }>(async (request, context, services) => {
  const user = await requireUser(services.auth, request.headers);
  const { id } = await context.params;
  const session = await requireRecordingAccess(services.db, user, id);
  const recordings = await services.db.terminalRecording.findMany({
    where: { sessionId: id },
    orderBy: { machine: "asc" },
    select: { machine: true, startedAt: true, bytes: true, truncated: true },
  });
  const lab = (await sessionLabById(services.db, services.labs, id).catch(() => null))?.lab ?? null;
  const titles = new Map((lab?.manifest.steps ?? []).map((s) => [s.id, s.title]));
  const markers = await sessionMarkers(services.db, id, titles);
  return Response.json({
    sessionId: id,
    labSlug: session.labSlug,
    recordings,
    markers: markers.map((m) => ({ at: m.at, kind: m.kind, stepId: m.stepId, label: markerLabel(m) })),
  });
});
