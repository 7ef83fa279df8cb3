/**
 * Pre-provisioning a cohort ahead of class: a lab session (machines + lab setup) for every
 * learner × lab of the cohort, so class starts without waiting for machines. A job is rows: the
 * `ProvisionJob` (counters and failures the admin page polls) and one `ProvisionItem` per
 * learner × lab, written when the job is made.
 *
 * A running job is worked on by one process at a time, the holder of its lease (`holder`,
 * `leaseUntil`), which it renews while it works. When the holder dies or stops, the lease runs
 * out (or is given back at once on a clean stop) and any process's `Provisioner` — the same one
 * after a restart — takes the job over and goes on with its pending items. An item is
 * idempotent: a learner's existing live session counts as done (startOrResumeSession), and a
 * start the dead process left half-done is settled by the session reconciler first. An item
 * leaves `pending` once (a conditional write, with the job's counters in the same transaction),
 * so the counts stay right however often a job changes hands.
 */
import type { Logger } from "pino";
import type { Db } from "../db/client";
import type { Prisma } from "../db/generated/client";
import type { EventBus } from "../events/bus";
import type { LabCatalog } from "../labs/catalog";
import { runLabSetup } from "../labs/setup";
import { currentLabVersion } from "../labs/versions";
import { PROCESS_HOLDER } from "../leases/roles";
import { isNoCapacity, type MachineProvider } from "../machines/provider";
import type { SshExecPool } from "../ssh/exec";
import { machineEndpoint, startOrResumeSession } from "../sessions/lab-sessions";
import { recordAudit } from "../audit";
import { examStartRequest, openAttempt } from "../exams/attempts";
import { CohortRuleError, getCohortOrThrow, type CohortView } from "./cohorts";
import { getProvisionJob, toView, type ProvisionFailure, type ProvisionJobView } from "./provision-jobs";

/** Sessions started at once: machine creation is CPU- and memory-heavy (QEMU boots), so few at a time. */
export const PROVISION_CONCURRENCY = 2;
/** A job's lease without renewal, ms: how long a dead holder keeps its job at most. */
export const JOB_LEASE_MS = 30_000;
/** The holder renews its jobs' leases this often, ms. */
export const JOB_RENEW_MS = 10_000;
/** Every process looks for jobs whose holder is gone this often, ms (and at start). */
export const JOB_POLL_MS = 10_000;

export interface ProvisionDeps {
  db: Db;
  provider: MachineProvider;
  labs: LabCatalog;
  pool: SshExecPool;
  bus?: EventBus;
  log: Logger;
}

export interface ProvisionerOptions {
  holder?: string;
  leaseMs?: number;
  renewMs?: number;
  pollMs?: number;
  concurrency?: number;
}

export class Provisioner {
  /** Jobs this process works on now, by id. */
  private readonly working = new Map<string, Promise<ProvisionJobView | null>>();
  private timer: NodeJS.Timeout | null = null;
  private polling: Promise<string[]> | null = null;
  private stopped = false;
  private readonly holder: string;
  private readonly leaseMs: number;
  private readonly renewMs: number;
  private readonly pollMs: number;
  private readonly concurrency: number;

  constructor(
    private readonly deps: ProvisionDeps,
    options: ProvisionerOptions = {},
  ) {
    this.holder = options.holder ?? PROCESS_HOLDER;
    this.leaseMs = options.leaseMs ?? JOB_LEASE_MS;
    this.renewMs = options.renewMs ?? JOB_RENEW_MS;
    this.pollMs = options.pollMs ?? JOB_POLL_MS;
    this.concurrency = options.concurrency ?? PROVISION_CONCURRENCY;
  }

  /** Takes over abandoned jobs now and every poll interval. */
  start(): void {
    if (this.timer || this.stopped) return;
    this.timer = setInterval(() => void this.resumeAbandoned(), this.pollMs);
    this.timer.unref();
    void this.resumeAbandoned();
  }

  /**
   * Stops taking items and gives this process's jobs back (lease cleared), so another process
   * resumes them at its next poll. Starts already under way are not waited for: a session they
   * leave `starting` is settled by the reconciler, and the next holder redoes the item.
   */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.polling?.catch(() => undefined);
    await this.deps.db.provisionJob
      .updateMany({ where: { holder: this.holder, state: "running" }, data: { holder: null, leaseUntil: null } })
      .catch((error: Error) =>
        this.deps.log.warn({ err: error.message }, "giving pre-provisioning jobs back failed; their leases run out"),
      );
  }

  /**
   * Makes a job for the cohort and works on it in this process; returns the job at once.
   * `done` resolves when this process has finished it (tests wait on it; the API does not), or
   * with null when the job went to another process.
   */
  async startJob(cohortId: string, actorId: string | null): Promise<{ job: ProvisionJobView; done: Promise<ProvisionJobView | null> }> {
    const job = await createProvisionJob(this.deps.db, cohortId, actorId, this.lease());
    return { job, done: this.run(job) };
  }

  /** The lease a job made for this process carries (createProvisionJob's `lease`). */
  lease(): { holder: string; leaseMs: number } {
    return { holder: this.holder, leaseMs: this.leaseMs };
  }

  /**
   * Works on a job createProvisionJob made with this process's lease. The API route makes the job
   * itself: a refusal (no such cohort, ended, already running) must be thrown by a class of the
   * route's own module graph to be answered as one (see ARCHITECTURE.md, "Rooms").
   */
  run(job: ProvisionJobView): Promise<ProvisionJobView | null> {
    return job.state === "running" ? this.work(job.id) : Promise.resolve(job);
  }

  /** Claims every running job whose lease ran out and works on it; the ids taken over. */
  resumeAbandoned(): Promise<string[]> {
    this.polling ??= this.claimAbandoned().finally(() => (this.polling = null));
    return this.polling;
  }

  /** Waits for this process's work on a job (tests). */
  async settled(jobId: string): Promise<ProvisionJobView | null> {
    return (await this.working.get(jobId)) ?? getProvisionJob(this.deps.db, jobId);
  }

  private async claimAbandoned(): Promise<string[]> {
    if (this.stopped) return [];
    const { db, log } = this.deps;
    try {
      const stale = { OR: [{ leaseUntil: null }, { leaseUntil: { lt: new Date() } }] };
      const jobs = await db.provisionJob.findMany({
        where: { state: "running", ...stale },
        select: { id: true, holder: true },
        orderBy: { createdAt: "asc" },
      });
      const taken: string[] = [];
      for (const { id, holder } of jobs) {
        if (this.stopped || this.working.has(id)) continue;
        const claimed = await db.provisionJob.updateMany({
          where: { id, state: "running", ...stale },
          data: { holder: this.holder, leaseUntil: new Date(Date.now() + this.leaseMs) },
        });
        if (claimed.count === 0) continue;
        log.info({ jobId: id, from: holder }, "pre-provisioning job taken over; resuming its pending items");
        taken.push(id);
        void this.work(id);
      }
      return taken;
    } catch (error) {
      log.error({ err: (error as Error).message }, "looking for abandoned pre-provisioning jobs failed");
      return [];
    }
  }

  /** Works on a job this process holds the lease of, until its items are settled or the lease is lost. */
  private work(jobId: string): Promise<ProvisionJobView | null> {
    const running = this.workOn(jobId)
      .catch(async (error: Error) => {
        // Not the items' fault (the database went away, …): give the job back for a retry.
        this.deps.log.error({ jobId, err: error.message }, "pre-provisioning job interrupted; it is resumed later");
        await this.deps.db.provisionJob
          .updateMany({ where: { id: jobId, holder: this.holder }, data: { holder: null, leaseUntil: null } })
          .catch(() => undefined);
        return null;
      })
      .finally(() => this.working.delete(jobId));
    this.working.set(jobId, running);
    return running;
  }

  private async workOn(jobId: string): Promise<ProvisionJobView | null> {
    const { db } = this.deps;
    const job = await db.provisionJob.findUniqueOrThrow({ where: { id: jobId }, select: { cohortId: true } });
    const cohort = await getCohortOrThrow(db, job.cohortId);
    const queue = await db.provisionItem.findMany({ where: { jobId, state: "pending" }, orderBy: { position: "asc" } });
    let lost = false;
    const renew = setInterval(() => {
      void db.provisionJob
        .updateMany({
          where: { id: jobId, holder: this.holder, state: "running" },
          data: { leaseUntil: new Date(Date.now() + this.leaseMs) },
        })
        .then(({ count }) => {
          if (count === 0) lost = true;
        })
        .catch(() => undefined);
    }, this.renewMs);
    try {
      const worker = async () => {
        for (let item = queue.shift(); item && !lost && !this.stopped; item = queue.shift()) await this.provisionItem(jobId, cohort, item);
      };
      await Promise.all(Array.from({ length: Math.min(this.concurrency, queue.length) }, worker));
    } finally {
      clearInterval(renew);
    }
    if (lost || this.stopped) return null;
    // Settled only if nothing is pending (a job given back meanwhile is another process's now).
    const pending = await db.provisionItem.count({ where: { jobId, state: "pending" } });
    if (pending > 0) return null;
    const failed = await db.provisionItem.count({ where: { jobId, state: "failed" } });
    await db.provisionJob.updateMany({
      where: { id: jobId, holder: this.holder, state: "running" },
      data: { state: failed > 0 ? "failed" : "done", finishedAt: new Date(), holder: null, leaseUntil: null },
    });
    return getProvisionJob(db, jobId);
  }

  /** One learner × lab: a session that is ready (or an existing live one), then the item settled once. */
  private async provisionItem(
    jobId: string,
    cohort: CohortView,
    item: { id: string; learnerId: string; email: string; labSlug: string },
  ): Promise<void> {
    const { db } = this.deps;
    try {
      const { lab, hash } = await currentLabVersion(db, this.deps.labs, item.labSlug);
      const session = await startOrResumeSession(
        db,
        this.deps.provider,
        {
          learnerId: item.learnerId,
          labSlug: lab.slug,
          machines: lab.manifest.machines,
          image: lab.manifest.image,
          internet: lab.manifest.network.internet,
          // The cohort's limits as they are (no time limit when it sets none).
          cohortId: cohort.id,
          // Made ahead of class: the clocks start when class does, so the machines are neither
          // suspended as idle nor expired before the learners arrive.
          clockStartsAt: cohort.startsAt,
          labVersion: { hash, firstStepId: lab.steps[0]?.id ?? null },
          ...examStartRequest(lab, cohort.examMinutes),
        },
        (sid) => runLabSetup(this.deps.pool, lab, (machine) => machineEndpoint(db, sid, machine)),
        // An exam's attempt comes with its session; its clock starts when the learner opens it.
        { onStarted: (sid) => void openAttempt(db, sid, item.learnerId, lab, cohort.examMinutes).catch(() => undefined) },
      );
      this.deps.bus?.publishSessionChange(session.id);
      await settleItem(db, jobId, item.id, { state: "done" });
    } catch (error) {
      await settleItem(db, jobId, item.id, {
        state: "failed",
        code: isNoCapacity(error) ? "noCapacity" : "failed",
        message: (error as Error).message,
      });
    }
  }
}

/**
 * Makes a running job (items for every learner × lab, in the order learners joined) held by
 * `holder`; refused while another job of the cohort runs or when the cohort has ended.
 */
export async function createProvisionJob(
  db: Db,
  cohortId: string,
  actorId: string | null,
  lease: { holder: string; leaseMs: number },
): Promise<ProvisionJobView> {
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
    const empty = work.length === 0;
    const created = await tx.provisionJob.create({
      data: {
        cohortId,
        total: work.length,
        createdById: actorId,
        state: empty ? "done" : "running",
        finishedAt: empty ? new Date() : null,
        holder: empty ? null : lease.holder,
        leaseUntil: empty ? null : new Date(Date.now() + lease.leaseMs),
        items: { create: work.map((item, position) => ({ ...item, position })) },
      },
    });
    await recordAudit(tx, {
      actorId,
      action: "cohort.provision",
      targetType: "cohort",
      targetId: cohortId,
      detail: { jobId: created.id, total: work.length },
    });
    return created;
  });
  return toView(job);
}

/** Moves an item out of `pending` once, with the job's counters (and failures) in the same transaction. */
async function settleItem(
  db: Db,
  jobId: string,
  itemId: string,
  outcome: { state: "done" } | { state: "failed"; code: ProvisionFailure["code"]; message: string },
): Promise<void> {
  await db.$transaction(async (tx) => {
    const moved = await tx.provisionItem.updateMany({
      where: { id: itemId, state: "pending" },
      data: { ...outcome, finishedAt: new Date() },
    });
    if (moved.count === 0) return;
    if (outcome.state === "done") {
      await tx.provisionJob.update({ where: { id: jobId }, data: { succeeded: { increment: 1 } } });
      return;
    }
    const failed = await tx.provisionItem.findMany({ where: { jobId, state: "failed" }, orderBy: { position: "asc" } });
    const failures: ProvisionFailure[] = failed.map((f) => ({
      learnerId: f.learnerId,
      email: f.email,
      labSlug: f.labSlug,
      code: f.code === "noCapacity" ? "noCapacity" : "failed",
      message: f.message ?? "",
    }));
    await tx.provisionJob.update({
      where: { id: jobId },
      data: { failed: { increment: 1 }, failures: failures as unknown as Prisma.InputJsonValue },
    });
  });
}
