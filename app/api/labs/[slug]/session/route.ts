/**
 * POST /api/labs/:slug/session — start or resume the caller's own session of a lab (new sessions
 * get machines and the lab's setup) and hand out a write token per machine and per extra tab. Learners: the labs of
 * their live cohorts and labs marked `openToAll`; admins and instructors: any.
 *
 * `?async=1` (the lab page): answers at once; a session that is not ready yet answers 202 with
 * its id, and the start goes on in this process: the page follows it on `GET
 * /api/sessions/:id/start` and posts again when it is ready. Without it the answer waits for the
 * session (API clients, tests).
 */
import { requireUser } from "@/server/auth/guard";
import { cohortLimitsFor } from "@/server/cohorts/cohorts";
import { examStartRequest, openAttempt, refuseExamStart } from "@/server/exams/attempts";
import { apiError, tooManyRequests } from "@/server/http/route";
import { apiRoute } from "@/server/compose/route";
import { consume } from "@/server/throttle";
import { runLabSetup } from "@/server/labs/setup";
import { currentLabVersion } from "@/server/labs/versions";
import { log } from "@/server/log";
import { isNoCapacity } from "@/server/machines/provider";
import { machineEndpoint, startOrResumeSession } from "@/server/sessions/lab-sessions";
import { openTabs } from "@/server/sessions/tabs";
import { tabTokens, terminalTokens } from "@/server/terminal/token";

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
  // The learner's cohort for this lab (its time limit and idle time), if any.
  const limits = await cohortLimitsFor(services.db, user.id, lab.slug);
  // Learners start the labs of their live cohorts and labs open to all; staff start any.
  if (user.role === "learner" && !limits && !lab.manifest.openToAll) return apiError(request, 403, "labNotAllowed");
  // The demo mode's machines are this server's own host: a lab that changes the machine would change it.
  if (services.env.LABDECK_MACHINES === "netns-demo" && lab.manifest.changesMachine) return apiError(request, 409, "labNeedsRealMachines");
  // An exam: within the cohort's window, and no more sittings than the cohort gives (staff try it freely).
  const examRefusal = user.role === "learner" ? await refuseExamStart(services.db, user.id, lab, limits) : null;
  if (examRefusal) return apiError(request, 409, examRefusal);
  const refusal = await services.refuseUnbuiltImage(lab);
  if (refusal) return apiError(request, 503, refusal.worded, { detail: refusal.detail });
  const waitForReady = new URL(request.url).searchParams.get("async") !== "1";
  let onStarted: (sessionId: string) => void = () => undefined;
  const begun = new Promise<{ starting: string }>(
    (resolve) =>
      (onStarted = (sessionId) => {
        // An exam's attempt is made with its session (its clock starts once the machines are ready).
        void openAttempt(services.db, sessionId, user.id, lab, limits?.examMinutes)
          .catch((error: Error) => log.warn({ sessionId, err: error.message }, "exam attempt not made; the exam page makes it"))
          .finally(() => resolve({ starting: sessionId }));
      }),
  );
  const start = startOrResumeSession(
    services.db,
    services.provider,
    {
      learnerId: user.id,
      labSlug: lab.slug,
      machines: lab.manifest.machines,
      image: lab.manifest.image,
      internet: lab.manifest.network.internet,
      // The cohort's limits apply as the cohort is now (an admin may change them); the platform's where it sets none.
      cohortId: limits?.cohortId,
      limitMinutes: services.env.LABDECK_SESSION_MINUTES,
      labVersion: { hash: version.hash, firstStepId: lab.steps[0]?.id ?? null },
      ...examStartRequest(lab, limits?.examMinutes),
    },
    (sessionId, onScript) => runLabSetup(services.pool, lab, (machine) => machineEndpoint(services.db, sessionId, machine), undefined, onScript),
    { onStarted, queue: true },
  );
  // The terminals log in while the page loads and asks for them (seconds per login under TCG).
  start.then((session) => services.terminals.prewarm(session.id, session.machines), () => undefined);
  if (!waitForReady) {
    // The start runs on without the request; its failure is on the session row (startError).
    start.catch((error: Error) => log.warn({ slug, err: error.message }, "lab session start failed"));
    const first = await Promise.race([start.then((session) => ({ session }), () => null), begun]);
    if (first && "starting" in first) return Response.json({ sessionId: first.starting, state: "starting" }, { status: 202 });
  }
  try {
    const session = await start;
    return Response.json({
      sessionId: session.id,
      expiresAt: session.expiresAt?.toISOString() ?? null,
      mode: "write",
      machines: terminalTokens(services.secret, session.id, session.machines, "write", user.id),
      // The learner's extra shells (server/sessions/tabs.ts), so a reload shows them again.
      tabs: tabTokens(services.secret, session.id, await openTabs(services.db, session.id), "write", user.id),
    });
  } catch (error) {
    if (isNoCapacity(error)) return apiError(request, 503, "noCapacity");
    log.error({ slug, err: (error as Error).message }, "starting lab session failed");
    return apiError(request, 500, "labStartFailed");
  }
});
