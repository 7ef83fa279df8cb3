/**
 * POST /api/labs/:slug/session — start or resume the caller's own session of a lab (new sessions
 * get machines and the lab's setup) and hand out a write token per machine. Learners: the labs of
 * their live cohorts and labs marked `openToAll`; admins and instructors: any.
 */
import { requireUser } from "@/server/auth/guard";
import { cohortLimitsFor } from "@/server/cohorts/cohorts";
import { apiError, apiRoute, tooManyRequests } from "@/server/http/route";
import { consume } from "@/server/http/throttle";
import { runLabSetup } from "@/server/labs/setup";
import { currentLabVersion } from "@/server/labs/versions";
import { log } from "@/server/log";
import { isNoCapacity } from "@/server/machines/provider";
import { machineEndpoint, startOrResumeSession } from "@/server/sessions/lab-sessions";
import { terminalTokens } from "@/server/terminal/token";

export const dynamic = "force-dynamic";

export const POST = apiRoute<{ params: Promise<{ slug: string }> }>(async (request, context, services) => {
  const user = await requireUser(services.auth, request.headers);
  const wait = await consume(services.db, "sessionStart", user.id);
  if (wait) return tooManyRequests(request, wait);
  const { slug } = await context.params;
  // The lab as on disk now, stored as a version: a new session pins it (an existing one keeps its own).
  const version = await currentLabVersion(services.db, services.labs, slug).catch(() => null);
  if (!version) return apiError(request, 404, "noSuchLab");
  const { lab } = version;
  // A cohort's time limit and idle time for its labs, else the platform's.
  const limits = await cohortLimitsFor(services.db, user.id, lab.slug);
  // Learners start the labs of their live cohorts and labs open to all; staff start any.
  if (user.role === "learner" && !limits && !lab.manifest.openToAll) return apiError(request, 403, "labNotAllowed");
  // The demo mode's machines are this server's own host: a lab that changes the machine would change it.
  if (services.env.LABDECK_MACHINES === "netns-demo" && lab.manifest.changesMachine) return apiError(request, 409, "labNeedsRealMachines");
  const refusal = await services.refuseUnbuiltImage(lab);
  if (refusal) return Response.json(refusal, { status: 503 });
  try {
    const session = await startOrResumeSession(
      services.db,
      services.provider,
      { learnerId: user.id, labSlug: lab.slug, machines: lab.manifest.machines, image: lab.manifest.image, internet: lab.manifest.network.internet, limitMinutes: limits?.sessionMinutes ?? services.env.LABDECK_SESSION_MINUTES,
        idleMinutes: limits?.idleMinutes,
        labVersion: { hash: version.hash, firstStepId: lab.steps[0]?.id ?? null },
      },
      (sessionId) => runLabSetup(services.pool, lab, (machine) => machineEndpoint(services.db, sessionId, machine)),
    );
    return Response.json({
      sessionId: session.id,
      expiresAt: session.expiresAt?.toISOString() ?? null,
      mode: "write",
      machines: terminalTokens(services.secret, session.id, session.machines, "write", user.id),
    });
  } catch (error) {
    if (isNoCapacity(error)) return apiError(request, 503, "noCapacity");
    log.error({ slug, err: (error as Error).message }, "starting lab session failed");
    return apiError(request, 500, "labStartFailed");
  }
});
