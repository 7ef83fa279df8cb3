/**
 * Pre-provisioning a cohort ahead of class: a lab session (machines + lab setup) for every
 * learner × lab of the cohort, so class starts without waiting for machines. Runs in this process
 * as a job with a progress row (ProvisionJob: total, succeeded, failed, failures with reasons)
 * that the admin page polls. A learner's existing live session counts as done (startOrResume).
 */
import type { Db } from "../db/client";
import type { Prisma } from "../db/generated/client";
import type { EventBus } from "../events/bus";
import type { LabCatalog } from "../labs/catalog";
import { runLabSetup } from "../labs/setup";
import { isNoCapacity, type MachineProvider } from "../machines/provider";
import type { SshExecPool } from "../machines/ssh-exec";
import { machineEndpoint, startOrResumeSession } from "../sessions/lab-sessions";
import { recordAudit } from "./audit";
import { CohortRuleError, getCohortOrThrow } from "./cohorts";
import { getProvisionJob, toView, type ProvisionFailure, type ProvisionJobView } from "./provision-jobs";

/** Sessions started at once: machine creation is CPU- and memory-heavy (QEMU boots), so few at a time. */
export const PROVISION_CONCURRENCY = 2;

export interface ProvisionDeps {
  db: Db;
  provider: MachineProvider;
  labs: LabCatalog;
  pool: SshExecPool;
  bus?: EventBus;
}

/**
 * Starts a job for the cohort and returns it at once; the work goes on in the background.
 * `done` resolves when the job has finished (tests wait on it; the API does not).
 */
export async function startProvisionJob(
  deps: ProvisionDeps,
  cohortId: string,
  actorId: string | null,
): Promise<{ job: ProvisionJobView; done: Promise<ProvisionJobView> }> {
  const { db } = deps;
  const cohort = await getCohortOrThrow(db, cohortId);
  if (cohort.endedAt) throw new CohortRuleError("cohortEnded", 409, "the cohort has ended");
  const learners = await db.cohortMember.findMany({
    where: { cohortId, role: "learner" },
    orderBy: { addedAt: "asc" },
    select: { user: { select: { id: true, email: true } } },
  });
  const work = learners.flatMap(({ user }) => cohort.labs.map((labSlug) => ({ learnerId: user.id, email: user.email, labSlug })));
  const job = await db.$transaction(async (tx) => {
    // One running job per cohort (a second press while one runs is refused).
    if (await tx.provisionJob.findFirst({ where: { cohortId, state: "running" }, select: { id: true } })) {
      throw new CohortRuleError("provisionRunning", 409, "a pre-provisioning job is already running for this cohort");
    }
    const created = await tx.provisionJob.create({ data: { cohortId, total: work.length, createdById: actorId, state: work.length === 0 ? "done" : "running", finishedAt: work.length === 0 ? new Date() : null } });
    await recordAudit(tx, { actorId, action: "cohort.provision", targetType: "cohort", targetId: cohortId, detail: { jobId: created.id, total: work.length } });
    return created;
  });

  const run = async (): Promise<ProvisionJobView> => {
    const queue = [...work];
    const failures: ProvisionFailure[] = [];
    const worker = async () => {
      for (let item = queue.shift(); item; item = queue.shift()) {
        try {
          const lab = await deps.labs.get(item.labSlug);
          const session = await startOrResumeSession(
            db,
            deps.provider,
            { learnerId: item.learnerId, labSlug: lab.slug, machines: lab.manifest.machines, image: lab.manifest.image, internet: lab.manifest.network.internet, idleMinutes: cohort.idleMinutes },
            (sid) => runLabSetup(deps.pool, lab, (machine) => machineEndpoint(db, sid, machine)),
          );
          // Made ahead of class: the clocks start when class does, so the machines are neither
          // suspended as idle nor expired before the learners arrive.
          const classStarts = cohort.startsAt && cohort.startsAt.getTime() > Date.now() ? cohort.startsAt : new Date();
          await db.labSession.updateMany({
            where: { id: session.id, expiresAt: null },
            data: {
              lastActivityAt: classStarts,
              expiresAt: cohort.sessionMinutes ? new Date(classStarts.getTime() + cohort.sessionMinutes * 60_000) : null,
            },
          });
          deps.bus?.publishSessionChange(session.id);
          await db.provisionJob.update({ where: { id: job.id }, data: { succeeded: { increment: 1 } } });
        } catch (error) {
          const failure: ProvisionFailure = {
            ...item,
            code: isNoCapacity(error) ? "noCapacity" : "failed",
            message: (error as Error).message,
          };
          failures.push(failure);
          await db.provisionJob.update({
            where: { id: job.id },
            data: { failed: { increment: 1 }, failures: failures as unknown as Prisma.InputJsonValue },
          });
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(PROVISION_CONCURRENCY, work.length) }, worker));
    await db.provisionJob.update({ where: { id: job.id }, data: { state: failures.length > 0 ? "failed" : "done", finishedAt: new Date() } });
    return getProvisionJob(db, job.id) as Promise<ProvisionJobView>;
  };
  const done = work.length === 0 ? getProvisionJob(db, job.id).then((j) => j!) : run();
  done.catch(async (error: Error) => {
    await db.provisionJob
      .update({ where: { id: job.id }, data: { state: "failed", finishedAt: new Date(), failures: [{ learnerId: "", email: "", labSlug: "", code: "failed", message: error.message }] } })
      .catch(() => undefined);
  });
  return { job: toView(job), done };
}

/** At start-up: jobs a stopped process left running are marked failed (their work was cut short). */
export async function failInterruptedProvisionJobs(db: Db): Promise<number> {
  const { count } = await db.provisionJob.updateMany({ where: { state: "running" }, data: { state: "failed", finishedAt: new Date() } });
  return count;
}
