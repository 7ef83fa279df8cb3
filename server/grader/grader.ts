/**
 * The grader: runs the current step's check of every live session over SSH exec channels, at a
 * steady interval with jitter, a concurrency limit, per-check timeouts and backoff for machines
 * that do not answer; also on demand (the Check button). Every run is stored (as transitions and
 * counts, history.ts); a pass moves the
 * session to the next step (forward only) and publishes the new progress.
 *
 * Every server process runs one, over the same sessions: the schedule lives in the sessions' rows
 * (server/grader/claims.ts), each process keeps a copy refreshed every second, and a check runs
 * only on the process that wins its claim, so each due check runs once over all processes and
 * a session never has two checks at a time.
 */
import fs from "node:fs";
import type { Logger } from "pino";
import type { Db } from "../db/client";
import type { EventBus } from "../events/bus";
import { metrics } from "../ops/metrics";
import type { LabCatalog } from "../labs/catalog";
import type { Lab, LoadedStep } from "../labs/load";
import { firstOpenStep, type LabVersion } from "../labs/versions";
import { sessionLab } from "../sessions/lab-versions";
import { machineEndpoint } from "../sessions/lab-sessions";
import { checkRunning, claimCheck, releaseCheck } from "./claims";
import { pruneCheckRuns, recordCheckRun } from "./history";
import type { Progress } from "./progress";
import type { ScriptResult, SshExecPool } from "../machines/ssh-exec";
import type { SshEndpoint } from "../terminal/ssh";

/** Helpers put in front of every check (boot-time sysctl, swap, modules, units). */
export const CHECK_LIB = fs.readFileSync(new URL("./checklib.sh", import.meta.url), "utf8");

/** The script a step's check runs as: the platform's helpers, the lab's own, then the check. */
export function checkScript(lab: Pick<Lab, "checkLib">, step: Pick<LoadedStep, "check">): string {
  return `${CHECK_LIB}\n${lab.checkLib}\n${step.check.content}`;
}

export interface GraderOptions {
  /** Time between two checks of one session, in ms. */
  intervalMs?: number;
  /** Each interval is stretched or shrunk by up to this fraction, so sessions spread out. */
  jitter?: number;
  /** Most checks running at once over all sessions. */
  concurrency?: number;
  /** Longest wait before re-trying a session whose machine did not answer, in ms. */
  maxBackoffMs?: number;
  /** Check history older than this many days is pruned (history.ts); 0: kept forever. */
  retentionDays?: number;
}

const DEFAULTS: Required<GraderOptions> = { intervalMs: 2_000, jitter: 0.2, concurrency: 16, maxBackoffMs: 60_000, retentionDays: 30 };

/** How often old check history is pruned, ms (retention is counted in days; every process prunes, the DELETEs are idempotent). */
const PRUNE_INTERVAL_MS = 60 * 60_000;

interface Schedule {
  nextDue: number;
  /** Consecutive unreachable runs, for backoff. */
  unreachable: number;
  running: boolean;
  /** Nudged while a check was running: check again right after it. */
  rerun?: boolean;
  /** The learner pressed Enter: the next check runs without waiting for the shared due time. */
  nudged?: boolean;
  nudgeTimer?: NodeJS.Timeout;
}

/** A nudged session is checked this long after the learner's Enter, in ms: time for the command to finish. */
const NUDGE_DELAY_MS = 400;
/** Longest time between two reads of the live sessions, in ms. */
const REFRESH_MAX_MS = 1_000;
/** The Check button waits this long at most for a check running elsewhere to finish, in ms. */
const MANUAL_WAIT_MS = 60_000;
const MANUAL_POLL_MS = 150;

type CheckOutcome = ScriptResult["outcome"] | "busy" | null;

export class Grader {
  private readonly options: Required<GraderOptions>;
  private readonly schedules = new Map<string, Schedule>();
  private running = 0;
  private timer: NodeJS.Timeout | null = null;
  private refreshing = false;
  private pruneTimer: NodeJS.Timeout | null = null;
  /** Checks of this process now running (claimed, not yet released). */
  private readonly inFlight = new Set<Promise<unknown>>();
  /** SSH endpoints by session and machine: they do not change while a session lives. */
  private readonly endpoints = new Map<string, Map<string, SshEndpoint | null>>();

  constructor(
    private readonly deps: { db: Db; labs: LabCatalog; pool: SshExecPool; bus: EventBus; log: Logger },
    options: GraderOptions = {},
  ) {
    this.options = { ...DEFAULTS, ...options };
  }

  start(): void {
    if (this.timer) return;
    // Refreshes are a fraction of the interval (at most REFRESH_MAX_MS) so due sessions start
    // close to their time and new sessions are picked up quickly.
    this.timer = setInterval(() => void this.refresh(), Math.min(REFRESH_MAX_MS, Math.max(50, this.options.intervalMs / 4)));
    void this.refresh();
    if (this.options.retentionDays > 0) {
      const prune = () =>
        void pruneCheckRuns(this.deps.db, this.options.retentionDays).then(
          (rows) => rows > 0 && this.deps.log.info({ rows, retentionDays: this.options.retentionDays }, "old check history pruned"),
          (error: Error) => this.deps.log.warn({ err: error.message }, "check history prune failed"),
        );
      this.pruneTimer = setInterval(prune, PRUNE_INTERVAL_MS);
      this.pruneTimer.unref();
      prune();
    }
  }

  /** Stops starting checks; those already running go on (see drain). */
  stop(): void {
    if (this.timer) clearInterval(this.timer);
    if (this.pruneTimer) clearInterval(this.pruneTimer);
    this.timer = null;
    this.pruneTimer = null;
    for (const schedule of this.schedules.values()) if (schedule.nudgeTimer) clearTimeout(schedule.nudgeTimer);
  }

  /**
   * Stops starting checks and waits for this process's running ones to be recorded and released,
   * at most `timeoutMs`; true when none is left. A check cut by the bound is not lost: its claim
   * lapses at its lease and another process runs it.
   */
  async drain(timeoutMs: number): Promise<boolean> {
    this.stop();
    let timer: NodeJS.Timeout | undefined;
    const bound = new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), timeoutMs)));
    const done = (async () => {
      while (this.inFlight.size > 0) await Promise.allSettled([...this.inFlight]);
      return true as const;
    })();
    try {
      return await Promise.race([done, bound]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** Checks of this process running now. */
  get checksInFlight(): number {
    return this.inFlight.size;
  }

  /**
   * The learner just did something (pressed Enter in a terminal): check their session soon
   * rather than at its next poll, so a step unlocks about NUDGE_DELAY_MS after the command that
   * finished it. Polling stays the fallback for changes nobody typed.
   */
  nudge(sessionId: string): void {
    if (!this.timer) return;
    const due = Date.now() + NUDGE_DELAY_MS;
    let schedule = this.schedules.get(sessionId);
    // A session newer than the last refresh: check() itself makes sure it is live.
    if (!schedule) this.schedules.set(sessionId, (schedule = { nextDue: Infinity, unreachable: 0, running: false }));
    // A check already running may have started before the command finished: run again after it.
    if (schedule.running) schedule.rerun = true;
    schedule.nudged = true;
    if (schedule.nextDue <= due) return;
    schedule.nextDue = due;
    if (schedule.nudgeTimer) clearTimeout(schedule.nudgeTimer);
    schedule.nudgeTimer = setTimeout(() => this.dispatch(), NUDGE_DELAY_MS);
  }

  /**
   * How far behind its schedule the grader is, ms: the age of the oldest due check that has not
   * started (0 when nothing waits). A lag growing past the interval means it cannot keep up.
   */
  lagMs(now = Date.now()): number {
    if (!this.timer) return 0;
    let oldest = now;
    for (const s of this.schedules.values()) if (!s.running && s.nextDue < oldest) oldest = s.nextDue;
    return now - oldest;
  }

  /** Runs the current step's check now (Check button) and returns the progress after it. */
  async checkNow(sessionId: string): Promise<Progress> {
    // One check per session at a time over all processes: wait for a running one, then run ours.
    for (let waited = 0; ; waited += MANUAL_POLL_MS) {
      const outcome = await this.check(sessionId, "manual", "now", () => this.options.intervalMs);
      if (outcome !== "busy" || waited >= MANUAL_WAIT_MS || !(await checkRunning(this.deps.db, sessionId))) break;
      await new Promise((r) => setTimeout(r, MANUAL_POLL_MS));
    }
    return this.progress(sessionId);
  }

  /** A session's progress as the browser shows it. */
  async progress(sessionId: string): Promise<Progress> {
    const load = () =>
      this.deps.db.labSession.findUniqueOrThrow({
        where: { id: sessionId },
        include: {
          checkRuns: { where: { OR: [{ trigger: "manual" }, { outcome: "pass" }] }, orderBy: { lastAt: "desc" }, take: 1 },
          hintReveals: { select: { stepId: true } },
          completions: { select: { stepId: true } },
        },
      });
    let session = await load();
    // The steps of the session's own lab version; a session from before versions is pinned first.
    const { lab, hash } = await sessionLab(this.deps.db, this.deps.labs, session);
    if (session.labVersion !== hash) session = await load();
    const done = new Set(session.completions.map((c) => c.stepId));
    const last = session.checkRuns[0];
    return {
      sessionId,
      labVersion: hash,
      steps: lab.steps.map((step) => ({
        id: step.id,
        title: step.title,
        state: done.has(step.id) ? "done" : step.id === session.currentStepId ? "current" : "locked",
      })),
      currentStepId: session.currentStepId,
      lastCheck: last
        ? {
            stepId: last.stepId,
            outcome: last.outcome,
            trigger: last.trigger,
            output: last.output,
            at: last.lastAt.toISOString(),
            durationMs: last.durationMs,
          }
        : null,
      hintsRevealed: session.hintReveals.map((h) => h.stepId),
      completed: session.completedAt !== null,
    };
  }

  /** Syncs the schedules with the database's live sessions, then dispatches what is due. */
  private async refresh(): Promise<void> {
    if (this.refreshing) return;
    this.refreshing = true;
    try {
      const live = await this.deps.db.labSession.findMany({
        where: { state: "ready", completedAt: null },
        select: { id: true, gradeDueAt: true },
      });
      const now = Date.now();
      const liveIds = new Set(live.map((s) => s.id));
      for (const [id, schedule] of this.schedules) {
        if (liveIds.has(id)) continue;
        if (schedule.nudgeTimer) clearTimeout(schedule.nudgeTimer);
        this.schedules.delete(id);
        this.endpoints.delete(id);
      }
      for (const { id, gradeDueAt } of live) {
        const schedule = this.schedules.get(id);
        if (!schedule) {
          // New sessions spread over one interval instead of all starting at once.
          const nextDue = gradeDueAt ? gradeDueAt.getTime() : now + Math.random() * this.options.intervalMs;
          this.schedules.set(id, { nextDue, unreachable: 0, running: false });
        } else if (gradeDueAt && !schedule.running && !schedule.nudged) {
          // Another process may have run it: follow the shared schedule.
          schedule.nextDue = gradeDueAt.getTime();
        }
      }
    } catch (error) {
      this.deps.log.error({ err: (error as Error).message }, "grader refresh failed");
    } finally {
      this.refreshing = false;
    }
    this.dispatch();
  }

  /**
   * Starts checks for due sessions, most overdue first, up to the concurrency limit. Runs after
   * every refresh and whenever a check finishes, so a free slot is used at once; the ordering
   * shares an overload evenly instead of starving whoever sits last in the table.
   */
  private dispatch(): void {
    if (!this.timer) return;
    const now = Date.now();
    const due = [...this.schedules].filter(([, s]) => !s.running && s.nextDue <= now).sort(([, a], [, b]) => a.nextDue - b.nextDue);
    for (const [id, schedule] of due) {
      if (this.running >= this.options.concurrency) return;
      schedule.running = true;
      this.running++;
      const nudged = schedule.nudged === true;
      schedule.nudged = false;
      let delay = this.options.intervalMs;
      const delayFor = (outcome: CheckOutcome) => {
        const unreachable = outcome === "unreachable" ? schedule.unreachable + 1 : 0;
        return (delay = schedule.rerun ? NUDGE_DELAY_MS : this.delay(unreachable));
      };
      void this.check(id, "poll", nudged ? "now" : "due", delayFor)
        .then((outcome) => {
          if (outcome === "busy") {
            // Another process has it (running, or already run for this due time): the next
            // refresh brings the shared due time; a nudge is kept for after the running check.
            schedule.nudged = nudged || schedule.rerun === true;
            schedule.nextDue = Date.now() + (schedule.nudged ? NUDGE_DELAY_MS : this.options.intervalMs);
          } else {
            schedule.unreachable = outcome === "unreachable" ? schedule.unreachable + 1 : 0;
            schedule.nextDue = Date.now() + delay;
          }
          schedule.rerun = false;
        })
        .catch((error: Error) => {
          this.deps.log.error({ sessionId: id, err: error.message }, "grader check failed");
          schedule.nextDue = Date.now() + this.options.maxBackoffMs;
        })
        .finally(() => {
          schedule.running = false;
          this.running--;
          this.dispatch();
        });
    }
  }

  private delay(unreachableRuns: number): number {
    const { intervalMs, jitter, maxBackoffMs } = this.options;
    const base = unreachableRuns === 0 ? intervalMs : Math.min(maxBackoffMs, intervalMs * 2 ** unreachableRuns);
    return base * (1 - jitter + Math.random() * 2 * jitter);
  }

  /**
   * Runs and records one check of a session's current step if this process wins its claim;
   * returns its outcome (null: nothing to check; busy: another process runs or ran it).
   * `delayFor` gives the time to the next poll, written with the release.
   */
  private async check(sessionId: string, trigger: "poll" | "manual", claim: "due" | "now", delayFor: (outcome: CheckOutcome) => number): Promise<CheckOutcome> {
    const { db, labs } = this.deps;
    let session = await db.labSession.findUnique({ where: { id: sessionId } });
    if (!session || session.state !== "ready" || session.completedAt) return null;
    // Graded against the session's pinned lab version, whatever the files on disk say now.
    let version: LabVersion;
    try {
      version = await sessionLab(db, labs, session);
    } catch (error) {
      this.deps.log.warn({ sessionId, lab: session.labSlug, err: (error as Error).message }, "lab cannot be loaded; not grading");
      return "error";
    }
    if (session.labVersion !== version.hash) session = await db.labSession.findUniqueOrThrow({ where: { id: sessionId } });
    const step = version.lab.steps.find((s) => s.id === session.currentStepId);
    if (!step) return null;
    if (!(await claimCheck(db, sessionId, claim, step.timeoutSeconds))) return "busy";
    const work = (async () => {
      let outcome: CheckOutcome = "error";
      try {
        outcome = await this.runClaimed(sessionId, trigger, version, step);
        return outcome;
      } finally {
        await releaseCheck(db, sessionId, delayFor(outcome)).catch((error: Error) => this.deps.log.warn({ sessionId, err: error.message }, "check release failed"));
      }
    })();
    this.inFlight.add(work);
    try {
      return await work;
    } finally {
      this.inFlight.delete(work);
    }
  }

  private async runClaimed(sessionId: string, trigger: "poll" | "manual", version: LabVersion, step: LoadedStep): Promise<ScriptResult["outcome"]> {
    const { db, pool, bus } = this.deps;
    const endpoint = await this.endpoint(sessionId, step.machine);
    const result: ScriptResult = endpoint
      ? await pool.run(endpoint, checkScript(version.lab, step), step.timeoutSeconds)
      : { outcome: "error", exitCode: null, output: `このセッションに ${step.machine} がありません`, durationMs: 0 };
    const changed = await recordCheckRun(db, { sessionId, stepId: step.id, machine: step.machine, trigger, result });
    metrics().checkSeconds.observe({ outcome: result.outcome, trigger }, result.durationMs / 1000);
    if (result.outcome === "pass") await this.advance(sessionId, version, step.id);
    // What the learner sees changes only with a pass or a run they asked for; instructors'
    // dashboards show the newest failure, which only a new history row changes.
    if (result.outcome === "pass" || trigger === "manual") await bus.publishProgress(sessionId);
    else if (changed) await bus.publishSessionChange(sessionId);
    return result.outcome;
  }

  private async endpoint(sessionId: string, machine: string): Promise<SshEndpoint | null> {
    let machines = this.endpoints.get(sessionId);
    if (!machines) this.endpoints.set(sessionId, (machines = new Map()));
    if (!machines.has(machine)) machines.set(machine, await machineEndpoint(this.deps.db, sessionId, machine));
    return machines.get(machine)!;
  }

  /**
   * Marks step `stepId` passed and makes the version's first step not passed current (none: the
   * session is complete); a no-op unless the session is (still) on that step of that version,
   * so a move to another version meanwhile wins (server/sessions/lab-versions.ts).
   */
  private async advance(sessionId: string, version: LabVersion, stepId: string): Promise<void> {
    await this.deps.db.$transaction(async (tx) => {
      const passed = await tx.stepCompletion.findMany({ where: { sessionId }, select: { stepId: true } });
      const next = firstOpenStep(version.lab, new Set([...passed.map((c) => c.stepId), stepId]));
      const now = new Date();
      const moved = await tx.labSession.updateMany({
        where: { id: sessionId, labVersion: version.hash, currentStepId: stepId },
        data: { currentStepId: next, currentStepSince: now, completedAt: next === null ? now : null },
      });
      if (moved.count === 1) await tx.stepCompletion.createMany({ data: [{ sessionId, stepId }], skipDuplicates: true });
    });
  }
}
