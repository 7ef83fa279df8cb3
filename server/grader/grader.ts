/**
 * The grader: runs the current step's check of every live session over SSH exec channels, at a
 * steady interval with jitter, a concurrency limit, per-check timeouts and backoff for machines
 * that do not answer; also on demand (the Check button). Every run is stored; a pass moves the
 * session to the next step (forward only) and publishes the new progress.
 */
import fs from "node:fs";
import type { Logger } from "pino";
import type { Db } from "../db/client";
import type { EventBus } from "../events/bus";
import type { LabCatalog } from "../labs/catalog";
import type { Lab } from "../labs/load";
import { machineEndpoint } from "../sessions/lab-sessions";
import type { Progress } from "./progress";
import type { ScriptResult, SshExecPool } from "../machines/ssh-exec";

/** Helpers put in front of every check (boot-time sysctl, swap, modules, units). */
export const CHECK_LIB = fs.readFileSync(new URL("./checklib.sh", import.meta.url), "utf8");

export interface GraderOptions {
  /** Time between two checks of one session, in ms. */
  intervalMs?: number;
  /** Each interval is stretched or shrunk by up to this fraction, so sessions spread out. */
  jitter?: number;
  /** Most checks running at once over all sessions. */
  concurrency?: number;
  /** Longest wait before re-trying a session whose machine did not answer, in ms. */
  maxBackoffMs?: number;
}

const DEFAULTS: Required<GraderOptions> = { intervalMs: 2_000, jitter: 0.2, concurrency: 16, maxBackoffMs: 60_000 };

interface Schedule {
  nextDue: number;
  /** Consecutive unreachable runs, for backoff. */
  unreachable: number;
  running: boolean;
}

export class Grader {
  private readonly options: Required<GraderOptions>;
  private readonly schedules = new Map<string, Schedule>();
  private running = 0;
  private timer: NodeJS.Timeout | null = null;
  private ticking = false;

  constructor(
    private readonly deps: { db: Db; labs: LabCatalog; pool: SshExecPool; bus: EventBus; log: Logger },
    options: GraderOptions = {},
  ) {
    this.options = { ...DEFAULTS, ...options };
  }

  start(): void {
    if (this.timer) return;
    // Ticks are a fraction of the interval so due sessions start close to their time.
    this.timer = setInterval(() => void this.tick(), Math.max(50, this.options.intervalMs / 4));
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  /** Runs the current step's check now (Check button) and returns the progress after it. */
  async checkNow(sessionId: string): Promise<Progress> {
    await this.check(sessionId, "manual");
    return this.progress(sessionId);
  }

  /** A session's progress as the browser shows it. */
  async progress(sessionId: string): Promise<Progress> {
    const session = await this.deps.db.labSession.findUniqueOrThrow({
      where: { id: sessionId },
      include: {
        checkRuns: { where: { OR: [{ trigger: "manual" }, { outcome: "pass" }] }, orderBy: { createdAt: "desc" }, take: 1 },
        hintReveals: { select: { stepId: true } },
      },
    });
    const lab = await this.deps.labs.get(session.labSlug);
    const last = session.checkRuns[0];
    return {
      sessionId,
      steps: lab.steps.map((step, i) => ({
        id: step.id,
        title: step.title,
        state: i < session.currentStep ? "done" : i === session.currentStep ? "current" : "locked",
      })),
      currentStepId: lab.steps[session.currentStep]?.id ?? null,
      lastCheck: last
        ? {
            stepId: last.stepId,
            outcome: last.outcome,
            trigger: last.trigger,
            output: last.output,
            at: last.createdAt.toISOString(),
            durationMs: last.durationMs,
          }
        : null,
      hintsRevealed: session.hintReveals.map((h) => h.stepId),
      completed: session.completedAt !== null,
    };
  }

  private async tick(): Promise<void> {
    if (this.ticking) return;
    this.ticking = true;
    try {
      const live = await this.deps.db.labSession.findMany({
        where: { state: "ready", completedAt: null },
        select: { id: true },
      });
      const now = Date.now();
      const liveIds = new Set(live.map((s) => s.id));
      for (const id of this.schedules.keys()) if (!liveIds.has(id)) this.schedules.delete(id);
      for (const { id } of live) {
        let schedule = this.schedules.get(id);
        if (!schedule) {
          schedule = { nextDue: now + Math.random() * this.options.intervalMs, unreachable: 0, running: false };
          this.schedules.set(id, schedule);
        }
        if (schedule.running || schedule.nextDue > now || this.running >= this.options.concurrency) continue;
        schedule.running = true;
        this.running++;
        void this.check(id, "poll")
          .then((outcome) => {
            schedule.unreachable = outcome === "unreachable" ? schedule.unreachable + 1 : 0;
            schedule.nextDue = Date.now() + this.delay(schedule.unreachable);
          })
          .catch((error: Error) => {
            this.deps.log.error({ sessionId: id, err: error.message }, "grader check failed");
            schedule.nextDue = Date.now() + this.options.maxBackoffMs;
          })
          .finally(() => {
            schedule.running = false;
            this.running--;
          });
      }
    } catch (error) {
      this.deps.log.error({ err: (error as Error).message }, "grader tick failed");
    } finally {
      this.ticking = false;
    }
  }

  private delay(unreachableRuns: number): number {
    const { intervalMs, jitter, maxBackoffMs } = this.options;
    const base = unreachableRuns === 0 ? intervalMs : Math.min(maxBackoffMs, intervalMs * 2 ** unreachableRuns);
    return base * (1 - jitter + Math.random() * 2 * jitter);
  }

  /** Runs and records one check of a session's current step; returns its outcome (null: nothing to check). */
  private async check(sessionId: string, trigger: "poll" | "manual"): Promise<ScriptResult["outcome"] | null> {
    const { db, labs, pool, bus } = this.deps;
    const session = await db.labSession.findUnique({ where: { id: sessionId } });
    if (!session || session.state !== "ready" || session.completedAt) return null;
    let lab: Lab;
    try {
      lab = await labs.get(session.labSlug);
    } catch (error) {
      this.deps.log.warn({ sessionId, lab: session.labSlug, err: (error as Error).message }, "lab cannot be loaded; not grading");
      return "error";
    }
    const index = session.currentStep;
    const step = lab.steps[index];
    if (!step) return null;
    const endpoint = await machineEndpoint(db, sessionId, step.machine);
    const result: ScriptResult = endpoint
      ? await pool.run(endpoint, `${CHECK_LIB}\n${step.check.content}`, step.timeoutSeconds)
      : { outcome: "error", exitCode: null, output: `このセッションに ${step.machine} がありません`, durationMs: 0 };
    await db.checkRun.create({
      data: {
        sessionId,
        stepId: step.id,
        machine: step.machine,
        trigger,
        outcome: result.outcome,
        exitCode: result.exitCode,
        output: result.output,
        durationMs: result.durationMs,
      },
    });
    if (result.outcome === "pass") await this.advance(sessionId, index, lab);
    // What the learner sees changes only with a pass or a run they asked for.
    if (result.outcome === "pass" || trigger === "manual") bus.publishProgress(await this.progress(sessionId));
    return result.outcome;
  }

  /** Moves the session from step `index` to the next; a no-op if it is not (any more) at `index`. */
  private async advance(sessionId: string, index: number, lab: Lab): Promise<void> {
    const next = index + 1;
    const done = next >= lab.steps.length;
    await this.deps.db.$transaction(async (tx) => {
      const moved = await tx.labSession.updateMany({
        where: { id: sessionId, currentStep: index },
        data: { currentStep: next, currentStepSince: new Date(), completedAt: done ? new Date() : null },
      });
      if (moved.count === 1) await tx.stepCompletion.create({ data: { sessionId, stepId: lab.steps[index]!.id, stepIndex: index } });
    });
  }
}
