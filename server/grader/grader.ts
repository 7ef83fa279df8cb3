/**
 * The grader: runs the current step's check of every live session over SSH exec channels, at a
 * steady interval with jitter, a concurrency limit, per-check timeouts and backoff for machines
 * that do not answer; also on demand (the Check button). Every run is stored (as transitions and
 * counts, history.ts); a pass moves the
 * session to the next step (forward only) and publishes the new progress.
 *
 * Every server process runs one, over the same sessions: the schedule lives in the sessions' rows
 * (server/grader/claims.ts). Each process claims due polls in batches for its free slots (one
 * statement, rows another process is claiming skipped), so each due check runs once over all
 * processes and a session never has two checks at a time; a poll's record also releases its
 * claim, so a failing poll costs two statements of which the claim is shared by its batch.
 */
import { randomUUID } from "node:crypto";
import type { Logger } from "pino";
import type { Db } from "../db/client";
import type { EventBus } from "../events/bus";
import { metrics } from "../ops/metrics";
import type { LabCatalog } from "../labs/catalog";
import { checkScript } from "../labs/check-script";
import type { LoadedStep } from "../labs/load";
import { firstOpenStep, type LabVersion } from "../labs/versions";
import { sessionLab } from "../labs/pinned";
import { isSealed, openPrivateKey, sealIfPlain } from "../machines/sealed-keys";
import { checkRunning, claimDue, claimNow, oldestDueLagMs, releaseCheck, RENEW_EVERY_MS, renewChecks, type ClaimedSession } from "./claims";
import { pruneCheckRuns, recordCheckRun, type CheckRelease } from "./history";
import type { Progress } from "./progress";
import { bootFactsScript, decide, newNonce, takeBootFacts, type ProofDecision } from "./reboot-proof";
import type { ScriptResult, SshExecPool } from "../ssh/exec";
import type { SshEndpoint } from "../ssh/connect";

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
  /**
   * Longest wait between polls of a session whose check keeps failing while nobody types, in ms
   * (doubling from intervalMs); 0 or at most intervalMs: every poll after an interval. The
   * learner's Enter (nudge) checks at once and starts again from intervalMs.
   */
  quietMaxMs?: number;
  /** The first claim waits this long after start, ms: after a restart the terminals' SSH logins go first. */
  startDelayMs?: number;
}

const DEFAULTS: Required<GraderOptions> = {
  intervalMs: 2_000,
  jitter: 0.2,
  concurrency: 16,
  maxBackoffMs: 60_000,
  retentionDays: 30,
  quietMaxMs: 0,
  startDelayMs: 0,
};

/**
 * The time to a session's next poll, ms: an interval; doubled per poll in a row whose machine did
 * not answer (up to maxBackoffMs) or, up to quietMaxMs, per failed poll in a row nobody nudged
 * (each check is seconds of a one-vCPU guest that also runs the learner's shell); stretched by
 * up to ±jitter so sessions spread out.
 */
export function pollDelayMs(
  options: Pick<Required<GraderOptions>, "intervalMs" | "jitter" | "maxBackoffMs" | "quietMaxMs">,
  runs: { unreachable: number; quiet: number },
  random: () => number = Math.random,
): number {
  const { intervalMs, jitter, maxBackoffMs, quietMaxMs } = options;
  let base = intervalMs;
  if (runs.unreachable > 0) base = Math.min(maxBackoffMs, intervalMs * 2 ** runs.unreachable);
  else if (runs.quiet > 1 && quietMaxMs > intervalMs) base = Math.min(quietMaxMs, intervalMs * 2 ** (runs.quiet - 1));
  return base * (1 - jitter + random() * 2 * jitter);
}

/** How often old check history is pruned, ms (retention is counted in days; every process prunes, the DELETEs are idempotent). */
const PRUNE_INTERVAL_MS = 60 * 60_000;

/** A nudged session is checked this long after the learner's Enter, in ms: time for the command to finish. */
const NUDGE_DELAY_MS = 400;
/** A nudge that found the session's check running on another process tries again this often, at most this many times. */
const NUDGE_RETRIES = 150;
/** Longest time between two claims of due polls, ms (a finished check claims at once when enough slots are free). */
const TICK_MAX_MS = 250;
/** How often the lag (the oldest due poll nobody started) is read, ms. */
const LAG_READ_MS = 1_000;
/** Unreachable-run counts of sessions not checked for this long are forgotten, ms. */
const BACKOFF_FORGET_MS = 10 * 60_000;
/** Longest wait between polls of a machine that does not answer while its step waits for a reboot proof, ms (it is coming back). */
const REBOOT_POLL_MAX_MS = 3_000;
/** SSH handshake limit of a check whose step waits for a reboot proof, ms (ssh-exec.ts RunOptions; a TCG guest's handshake takes 1-3 s). */
const REBOOT_CONNECT_TIMEOUT_MS = 8_000;
/** The Check button waits this long at most for a check running elsewhere to finish, in ms. */
const MANUAL_WAIT_MS = 60_000;
const MANUAL_POLL_MS = 150;

type CheckOutcome = ScriptResult["outcome"] | "busy" | null;

/** The release a check's record may carry (`for` the outcome; none: released by the caller), and whether it was written. */
interface ReleaseWithRecord {
  for(outcome: ScriptResult["outcome"]): CheckRelease | undefined;
  done: boolean;
}

/** A check of this process, from its claim to its release. */
interface RunningCheck {
  /** Nudged while it ran: the next poll is due NUDGE_DELAY_MS after it, not an interval. */
  rerun: boolean;
}

export class Grader {
  private readonly options: Required<GraderOptions>;
  /** This grader's id in the claims it holds (`LabSession.checkBy`). */
  private readonly owner = randomUUID();
  /** Checks of this process by session, from claim to release. */
  private readonly checks = new Map<string, RunningCheck>();
  /** Polls and nudged checks running now (manual checks are limited per learner by the route, not here). */
  private running = 0;
  private timer: NodeJS.Timeout | null = null;
  private claiming = false;
  /** The last claim filled every free slot: more polls may be due, so finished checks claim again at once. */
  private backlog = false;
  private lagTimer: NodeJS.Timeout | null = null;
  /** The lag as last read (ms) and when (Date.now()); grows from there until the next read. */
  private lag = { ms: 0, at: 0 };
  private renewTimer: NodeJS.Timeout | null = null;
  private pruneTimer: NodeJS.Timeout | null = null;
  /** Sessions whose nudge waits for its delay or for a free slot, with its timer. */
  private readonly nudges = new Map<string, { timer?: NodeJS.Timeout; retries: number }>();
  /** Consecutive unreachable runs per session on this process, for backoff. */
  private readonly unreachable = new Map<string, { runs: number; at: number }>();
  /** Failed polls in a row of sessions nobody nudged since, with the last one's time (pollDelayMs). */
  private readonly quiet = new Map<string, { runs: number; at: number }>();
  /** The first claim's timer while startDelayMs runs. */
  private startTimer: NodeJS.Timeout | null = null;
  /** Checks of this process now running (claimed, not yet released). */
  private readonly inFlight = new Set<Promise<unknown>>();

  constructor(
    private readonly deps: { db: Db; labs: LabCatalog; pool: SshExecPool; bus: EventBus; log: Logger },
    options: GraderOptions = {},
  ) {
    this.options = { ...DEFAULTS, ...options };
  }

  start(): void {
    if (this.timer) return;
    // Claims every fraction of the interval (at most TICK_MAX_MS) so due polls start close to
    // their time; a finished check claims at once when a batch of slots is free.
    this.timer = setInterval(() => this.claim(), Math.min(TICK_MAX_MS, Math.max(50, this.options.intervalMs / 8)));
    if (this.options.startDelayMs > 0)
      this.startTimer = setTimeout(() => ((this.startTimer = null), this.claim()), this.options.startDelayMs);
    else this.claim();
    const readLag = () =>
      void oldestDueLagMs(this.deps.db).then(
        (ms) => (this.lag = { ms, at: Date.now() }),
        (error: Error) => this.deps.log.warn({ err: error.message }, "grader lag read failed"),
      );
    this.lagTimer = setInterval(readLag, LAG_READ_MS);
    this.lagTimer.unref();
    readLag();
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

  /** Stops starting checks; those already running go on, their leases renewed (see drain). */
  stop(): void {
    for (const t of [this.timer, this.lagTimer, this.pruneTimer]) if (t) clearInterval(t);
    if (this.startTimer) clearTimeout(this.startTimer);
    this.timer = this.lagTimer = this.pruneTimer = this.startTimer = null;
    for (const nudge of this.nudges.values()) clearTimeout(nudge.timer);
    this.nudges.clear();
    this.lag = { ms: 0, at: 0 };
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
   * finished it. Polling stays the fallback for changes nobody typed. One nudge per session
   * waits at a time, and nudged checks share the polls' concurrency limit.
   */
  nudge(sessionId: string): void {
    if (!this.timer) return;
    this.quiet.delete(sessionId);
    // A check already running here may have started before the command finished: its next poll
    // comes NUDGE_DELAY_MS after it instead.
    const running = this.checks.get(sessionId);
    if (running) {
      running.rerun = true;
      return;
    }
    const pending = this.nudges.get(sessionId);
    if (pending) {
      // Waiting for a slot or a retry: the newest Enter restarts its delay.
      clearTimeout(pending.timer);
      pending.timer = setTimeout(() => this.runNudge(sessionId), NUDGE_DELAY_MS);
      return;
    }
    this.nudges.set(sessionId, { timer: setTimeout(() => this.runNudge(sessionId), NUDGE_DELAY_MS), retries: 0 });
  }

  /**
   * How far behind its schedule the grading is, ms: the age of the oldest due poll that no
   * process has started (0 when nothing waits; read every LAG_READ_MS). A lag growing past the
   * interval means the graders cannot keep up.
   */
  lagMs(now = Date.now()): number {
    if (!this.timer || this.lag.ms <= 0) return 0;
    return this.lag.ms + Math.max(0, now - this.lag.at);
  }

  /** Runs the current step's check now (Check button) and returns the progress after it. */
  async checkNow(sessionId: string): Promise<Progress> {
    // One check per session at a time over all processes: wait for a running one, then run ours.
    for (let waited = 0; ; waited += MANUAL_POLL_MS) {
      const claim = await claimNow(this.deps.db, this.owner, sessionId);
      if (claim) {
        await this.check(claim, "manual");
        break;
      }
      // Not claimed: a check runs elsewhere (wait for it), or the session is not gradable.
      if (waited >= MANUAL_WAIT_MS || !(await checkRunning(this.deps.db, sessionId))) break;
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
    const proving =
      session.proofStepId !== null && session.proofStepId === session.currentStepId && session.proofPassedAt !== null
        ? lab.steps.find((s) => s.id === session.proofStepId)
        : undefined;
    return {
      sessionId,
      labVersion: hash,
      steps: lab.steps.map((step) => ({
        id: step.id,
        title: step.title,
        state: done.has(step.id) ? "done" : step === proving ? "proving" : step.id === session.currentStepId ? "current" : "locked",
      })),
      currentStepId: session.currentStepId,
      rebootProof: proving ? { stepId: proving.id, machine: proving.machine, passedAt: session.proofPassedAt!.toISOString() } : null,
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

  /**
   * Claims due polls for the free slots (one statement for the batch, claims.ts) and starts them,
   * most overdue first. Runs every tick and when checks finish; one claim at a time.
   */
  private claim(): void {
    if (!this.timer || this.startTimer || this.claiming) return;
    const free = this.options.concurrency - this.running;
    if (free <= 0) {
      this.backlog = true;
      return;
    }
    this.claiming = true;
    void claimDue(this.deps.db, this.owner, free)
      .then((sessions) => {
        this.backlog = sessions.length === free;
        for (const session of sessions) this.startCheck(session);
      })
      .catch((error: Error) => this.deps.log.error({ err: error.message }, "grader claim failed"))
      .finally(() => {
        this.claiming = false;
        this.claimIfBacklog();
      });
  }

  /**
   * With a backlog, claims again once a batch of slots is free (a quarter of the limit), so one
   * statement claims several polls; without one, the next tick claims what came due.
   */
  private claimIfBacklog(): void {
    if (this.backlog && this.options.concurrency - this.running >= Math.max(1, Math.floor(this.options.concurrency / 4))) this.claim();
  }

  /** Runs a claimed poll within the concurrency limit. */
  private startCheck(session: ClaimedSession): void {
    this.running++;
    void this.check(session, "poll").finally(() => {
      this.running--;
      if (!this.nextNudge()) this.claimIfBacklog();
    });
  }

  /** A nudge's delay is over: claim the session now (or when a slot frees), retrying while its check runs elsewhere. */
  private runNudge(sessionId: string): void {
    const nudge = this.nudges.get(sessionId);
    if (!nudge || !this.timer) return;
    nudge.timer = undefined;
    if (this.running >= this.options.concurrency) return; // nextNudge runs it when a slot frees
    this.running++;
    void (async () => {
      try {
        const claim = await claimNow(this.deps.db, this.owner, sessionId);
        if (claim) {
          this.nudges.delete(sessionId);
          await this.check(claim, "poll");
        } else if (++nudge.retries < NUDGE_RETRIES && this.timer && (await checkRunning(this.deps.db, sessionId))) {
          // Its check runs on another process: this nudge runs after it.
          if (this.nudges.get(sessionId) === nudge && !nudge.timer)
            nudge.timer = setTimeout(() => this.runNudge(sessionId), NUDGE_DELAY_MS);
        } else if (this.nudges.get(sessionId) === nudge && !nudge.timer) this.nudges.delete(sessionId);
      } catch (error) {
        this.deps.log.error({ sessionId, err: (error as Error).message }, "grader nudge failed");
        if (this.nudges.get(sessionId) === nudge && !nudge.timer) this.nudges.delete(sessionId);
      } finally {
        this.running--;
        if (!this.nextNudge()) this.claimIfBacklog();
      }
    })();
  }

  /** Starts a nudge that waited for a free slot; true if one was started. */
  private nextNudge(): boolean {
    if (this.running >= this.options.concurrency) return false;
    for (const [sessionId, nudge] of this.nudges) {
      if (nudge.timer) continue;
      this.runNudge(sessionId);
      return true;
    }
    return false;
  }

  /** The time to a session's next poll after a check with `outcome`, ms (pollDelayMs). */
  private nextInMs(sessionId: string, outcome: ScriptResult["outcome"] | null, rerun: boolean, waitsForReboot = false): number {
    const unreachable = count(this.unreachable, sessionId, outcome === "unreachable");
    // A poll the learner's Enter asked for again, or one waiting for a reboot, is not quiet.
    const quiet = count(this.quiet, sessionId, outcome === "fail" && !rerun && !waitsForReboot);
    if (rerun) return NUDGE_DELAY_MS;
    const ms = pollDelayMs(this.options, { unreachable, quiet });
    return waitsForReboot ? Math.min(ms, Math.max(this.options.intervalMs, REBOOT_POLL_MAX_MS)) : ms;
  }

  /**
   * Runs and records one claimed check of a session's current step, then releases the claim
   * (with the time to the next poll); returns its outcome (null: nothing to check).
   */
  private async check(session: ClaimedSession, trigger: "poll" | "manual"): Promise<CheckOutcome> {
    const state: RunningCheck = { rerun: false };
    this.checks.set(session.id, state);
    this.renewLeases();
    const work = (async () => {
      let outcome: ScriptResult["outcome"] | null = "error";
      let released = false;
      try {
        // Graded against the session's pinned lab version, whatever the files on disk say now.
        const version = await sessionLab(this.deps.db, this.deps.labs, session).catch((error: Error) => {
          this.deps.log.warn({ sessionId: session.id, lab: session.labSlug, err: error.message }, "lab cannot be loaded; not grading");
          return null;
        });
        if (!version) return (outcome = "error");
        // A session from before versions was pinned just now: its current step is the row's new one.
        const currentStepId =
          session.labVersion === version.hash
            ? session.currentStepId
            : (await this.deps.db.labSession.findUniqueOrThrow({ where: { id: session.id }, select: { currentStepId: true } }))
                .currentStepId;
        const step = version.lab.steps.find((s) => s.id === currentStepId);
        if (!step) return (outcome = null);
        // Passed now and waiting for its machine to come back from a reboot: no long backoff.
        const waitsForReboot = session.proof?.stepId === step.id;
        // A failure's record releases the claim in the same statement; a pass is released after the advance (below).
        const release: ReleaseWithRecord = {
          for: (result) =>
            result === "pass" ? undefined : { owner: this.owner, nextInMs: this.nextInMs(session.id, result, state.rerun, waitsForReboot) },
          done: false,
        };
        try {
          outcome = await this.runClaimed(session, trigger, version, step, endpointOf(session, step.machine, this.deps.db), release);
        } finally {
          released = release.done;
        }
        return outcome;
      } catch (error) {
        this.deps.log.error({ sessionId: session.id, err: (error as Error).message }, "grader check failed");
        outcome = "error";
        return outcome;
      } finally {
        this.checks.delete(session.id);
        if (!released) {
          const nextInMs = this.nextInMs(session.id, outcome, state.rerun);
          await releaseCheck(this.deps.db, this.owner, session.id, nextInMs).catch((error: Error) =>
            this.deps.log.warn({ sessionId: session.id, err: error.message }, "check release failed"),
          );
        }
      }
    })();
    this.inFlight.add(work);
    try {
      return await work;
    } finally {
      this.inFlight.delete(work);
    }
  }

  /**
   * Keeps this process's claims alive while its checks run: one UPDATE for all of them every
   * RENEW_EVERY_MS, from the first running check until the last one ends (also while draining).
   */
  private renewLeases(): void {
    if (this.renewTimer) return;
    this.renewTimer = setInterval(() => {
      if (this.checks.size === 0) {
        clearInterval(this.renewTimer!);
        this.renewTimer = null;
        return;
      }
      void renewChecks(this.deps.db, this.owner, [...this.checks.keys()]).catch((error: Error) =>
        this.deps.log.warn({ err: error.message, checks: this.checks.size }, "check lease renewal failed"),
      );
    }, RENEW_EVERY_MS);
    this.renewTimer.unref();
  }

  /** Runs one claimed check and records it, with the claim's release when `release` gives one for the outcome. */
  private async runClaimed(
    session: ClaimedSession,
    trigger: "poll" | "manual",
    version: LabVersion,
    step: LoadedStep,
    endpoint: SshEndpoint | null,
    release: ReleaseWithRecord,
  ): Promise<ScriptResult["outcome"]> {
    const { db, pool, bus } = this.deps;
    const sessionId = session.id;
    // A verifyByReboot step's check also reads the machine's boot (reboot-proof.ts).
    const nonce = step.verifyByReboot ? newNonce() : null;
    const script = nonce ? bootFactsScript(nonce) + checkScript(version.lab, step) : checkScript(version.lab, step);
    const rebooting = session.proof?.stepId === step.id;
    let result: ScriptResult = endpoint
      ? await pool.run(endpoint, script, step.timeoutSeconds, rebooting ? { connectTimeoutMs: REBOOT_CONNECT_TIMEOUT_MS } : {})
      : { outcome: "error", exitCode: null, output: `${step.machine}: not a machine of this session`, durationMs: 0 };
    let proof: ProofDecision | null = null;
    if (nonce) {
      const taken = takeBootFacts(result.output, nonce);
      result = { ...result, output: taken.output };
      proof = decide(step.id, result.outcome, taken.facts, session.proof, new Date());
    }
    // A pass that does not complete the step (passed now, waiting for a reboot) is released with its record like a failure.
    const completes = result.outcome === "pass" && (proof === null || proof.kind === "proven");
    const releasing = completes ? undefined : release.for(result.outcome === "pass" ? "fail" : result.outcome);
    const changed = await recordCheckRun(db, { sessionId, stepId: step.id, machine: step.machine, trigger, result }, releasing);
    release.done = releasing !== undefined;
    metrics().checkSeconds.observe({ outcome: result.outcome, trigger }, result.durationMs / 1000);
    const proofChanged = proof !== null && (await this.applyProof(sessionId, step.id, proof));
    if (completes) await this.advance(sessionId, version, step.id);
    // What the learner sees changes only with a pass, a run they asked for or a proof's change;
    // instructors' dashboards show the newest failure, which only a new history row changes.
    if (completes || proofChanged || trigger === "manual") await bus.publishProgress(sessionId);
    else if (changed) await bus.publishSessionChange(sessionId);
    return result.outcome;
  }

  /** Writes a reboot-proof decision (except "proven": the advance ends it); true when the record changed. */
  private async applyProof(sessionId: string, stepId: string, proof: ProofDecision): Promise<boolean> {
    if (proof.kind === "record") {
      const set = await this.deps.db.labSession.updateMany({
        where: { id: sessionId, currentStepId: stepId },
        data: { proofStepId: stepId, proofBootId: proof.bootId, proofPassedAt: new Date() },
      });
      return set.count === 1;
    }
    if (proof.kind === "clear") {
      const cleared = await this.deps.db.labSession.updateMany({
        where: { id: sessionId, proofStepId: stepId },
        data: { proofStepId: null, proofBootId: null, proofPassedAt: null },
      });
      return cleared.count === 1;
    }
    return false;
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
        data: {
          currentStepId: next,
          currentStepSince: now,
          completedAt: next === null ? now : null,
          proofStepId: null,
          proofBootId: null,
          proofPassedAt: null,
        },
      });
      if (moved.count === 1) await tx.stepCompletion.createMany({ data: [{ sessionId, stepId }], skipDuplicates: true });
    });
  }
}

/** The SSH endpoint of a claimed session's machine, or null when it has none by that name. */
function endpointOf(session: ClaimedSession, name: string, db: Db): SshEndpoint | null {
  const machine = session.machines.find((m) => m.name === name);
  if (!machine) return null;
  // A row from before keys were encrypted is sealed now; failing to do so does not stop SSH.
  if (!isSealed(machine.privateKey)) void sealIfPlain(db, machine.id, machine.privateKey).catch(() => undefined);
  return {
    name: machine.name,
    host: machine.host,
    port: machine.port,
    user: machine.user,
    privateKey: openPrivateKey(machine.privateKey),
    hostKey: machine.hostKey,
  };
}

/** Counts a session's runs in a row in `runs` (forgotten when `now` is false); returns the count. */
function count(runs: Map<string, { runs: number; at: number }>, sessionId: string, now: boolean): number {
  const at = Date.now();
  if (runs.size > 1_000) for (const [id, r] of runs) if (at - r.at > BACKOFF_FORGET_MS) runs.delete(id);
  if (!now) {
    runs.delete(sessionId);
    return 0;
  }
  const n = (runs.get(sessionId)?.runs ?? 0) + 1;
  runs.set(sessionId, { runs: n, at });
  return n;
}
