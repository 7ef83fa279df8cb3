/**
 * Scoring of handed-in exams, in every process: each tick hands in the exams past their deadline
 * (even with no page open), and claims
 * attempts to score under a lease in the attempt's row, so a process that dies mid-way is taken
 * over and nothing is scored twice. A scoring runs every task's checks once (a result row per
 * task, check and phase: a resumed scoring runs only what is missing); then it reboots, in
 * parallel, the machines of tasks that must hold after a reboot (a clean reboot, a hard one when
 * the machine ignores it), runs those checks again on the new boot, and records the points.
 */
import type { Logger } from "pino";
import type { Db } from "../db/client";
import type { ExamPhase } from "../db/generated/client";
import { bootFactsScript, newNonce, takeBootFacts } from "../grader/reboot-proof";
import { CHECK_LIB } from "../labs/check-script";
import { sessionLab } from "../labs/pinned";
import type { Lab, LoadedStep } from "../labs/load";
import type { CurrentLabs } from "../labs/versions";
import type { MachineProvider } from "../machines/provider";
import { machineEndpoint, requestReboot, restartMachine } from "../sessions/lab-sessions";
import type { ScriptResult, SshExecPool } from "../ssh/exec";
import { handIn } from "./attempts";
import { passes, scoreExam, scoringChecks } from "./score";

export interface ExamScorerDeps {
  db: Db;
  pool: SshExecPool;
  provider: MachineProvider;
  labs: CurrentLabs;
  log: Logger;
  /** Someone's access changed (an exam handed in closes its terminals' input on every process). */
  onHandIn(learnerId: string): void;
  /** An attempt's state changed (pages waiting on it). */
  onChange(sessionId: string): void;
}

export interface ExamScorerOptions {
  /** How often deadlines and unclaimed scorings are looked at, ms. */
  intervalMs: number;
  /** How long a claim holds without renewal, ms. */
  leaseMs: number;
  /** Attempts scored at once by this process. */
  concurrency: number;
  /**
   * A machine still answering on its old boot this long after a clean reboot request ignored it
   * and is restarted hard, ms. One that does not answer (going down, or booting) gets until half
   * of rebootMs (at least this) before a hard restart, which would start its boot over.
   */
  cleanRebootMs: number;
  /** Longest wait for a new boot in all, ms. */
  rebootMs: number;
}

export const EXAM_SCORER_DEFAULTS: ExamScorerOptions = {
  intervalMs: 2_000,
  leaseMs: 60_000,
  concurrency: 4,
  cleanRebootMs: 90_000,
  rebootMs: 360_000,
};

/** Between boot id reads while waiting for a reboot, ms. */
const BOOT_POLL_MS = 3_000;

/**
 * Whether a machine waiting for its new boot `elapsedMs` after a clean reboot request is due a
 * hard restart: "ignored" when it still answers on its old boot past cleanRebootMs; "silent" when
 * it has not answered past half of rebootMs (at least cleanRebootMs). Three TCG guests rebooting
 * at once on a loaded host take minutes: no answer is no reason to restart a machine that may be
 * well into its new boot (a restart would start that boot over); the old boot answering is.
 */
export function hardRestartDue(
  answersOnOldBoot: boolean,
  elapsedMs: number,
  options: Pick<ExamScorerOptions, "cleanRebootMs" | "rebootMs">,
): "ignored" | "silent" | null {
  if (answersOnOldBoot) return elapsedMs > options.cleanRebootMs ? "ignored" : null;
  return elapsedMs > Math.max(options.cleanRebootMs, options.rebootMs / 2) ? "silent" : null;
}

export class ExamScorer {
  private readonly owner = `exams-${process.pid}-${Math.random().toString(36).slice(2, 10)}`;
  private timer: NodeJS.Timeout | null = null;
  /** The round running now, if any (stop waits for it: no query after the database goes). */
  private ticking: Promise<void> | null = null;
  private readonly scoring = new Set<string>();

  constructor(
    private readonly deps: ExamScorerDeps,
    private readonly options: ExamScorerOptions = EXAM_SCORER_DEFAULTS,
  ) {}

  start(): void {
    if (this.timer) return;
    this.timer = setInterval(() => void this.tick(), this.options.intervalMs);
    this.timer.unref();
    void this.tick();
  }

  /**
   * Stops claiming and waits for the round running now; scorings in flight are left to their
   * lease (another process, or the next start, resumes them).
   */
  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.ticking;
  }

  /** One round: deadlines, then claims. Exposed for tests. */
  tick(): Promise<void> {
    return (this.ticking ??= this.round().finally(() => (this.ticking = null)));
  }

  private async round(): Promise<void> {
    try {
      for (const { sessionId, learnerId } of await handIn(this.deps.db, "time")) {
        this.deps.log.info({ sessionId }, "exam handed in by its deadline");
        this.deps.onHandIn(learnerId);
        this.deps.onChange(sessionId);
      }
      await this.renew();
      while (this.scoring.size < this.options.concurrency && this.timer) {
        const claimed = await this.claim();
        if (!claimed) break;
        this.scoring.add(claimed.id);
        void this.score(claimed.id, claimed.sessionId).finally(() => this.scoring.delete(claimed.id));
      }
    } catch (error) {
      this.deps.log.error({ err: (error as Error).message }, "exam scorer tick failed");
    }
  }

  /** Scores one attempt now if nobody holds it (tests, and the tick). Resolves when it is scored or given up. */
  async scoreNow(sessionId: string): Promise<void> {
    const claimed = await this.claim(sessionId);
    if (claimed) await this.score(claimed.id, claimed.sessionId);
  }

  private async claim(sessionId?: string): Promise<{ id: string; sessionId: string } | null> {
    const rows = await this.deps.db.$queryRaw<{ id: string; sessionId: string }[]>`
      WITH t AS (SELECT (now() AT TIME ZONE 'UTC') AS at),
      picked AS (
        SELECT a."id" FROM "ExamAttempt" a, t
         WHERE a."state" = 'scoring'::"ExamState" AND (a."leaseUntil" IS NULL OR a."leaseUntil" < t.at)
           AND (${sessionId ?? null}::text IS NULL OR a."sessionId" = ${sessionId ?? null}::text)
         ORDER BY a."submittedAt" ASC
         LIMIT 1
         FOR UPDATE OF a SKIP LOCKED
      )
      UPDATE "ExamAttempt" a
         SET "leaseUntil" = t.at + make_interval(secs => ${this.options.leaseMs / 1000}::double precision), "leaseBy" = ${this.owner}
        FROM picked, t
       WHERE a."id" = picked."id"
      RETURNING a."id", a."sessionId"`;
    return rows[0] ?? null;
  }

  private async renew(): Promise<void> {
    if (this.scoring.size === 0) return;
    await this.deps.db.$executeRaw`
      UPDATE "ExamAttempt"
         SET "leaseUntil" = (now() AT TIME ZONE 'UTC') + make_interval(secs => ${this.options.leaseMs / 1000}::double precision)
       WHERE "id" = ANY(${[...this.scoring]}::text[]) AND "leaseBy" = ${this.owner} AND "state" = 'scoring'::"ExamState"`;
  }

  private async score(attemptId: string, sessionId: string): Promise<void> {
    const { db, log } = this.deps;
    const renewal = setInterval(() => void this.renew().catch(() => undefined), this.options.leaseMs / 3);
    try {
      const session = await db.labSession.findUniqueOrThrow({
        where: { id: sessionId },
        select: { id: true, labSlug: true, labVersion: true },
      });
      const { lab } = await sessionLab(db, this.deps.labs, session);
      const started = Date.now();
      await this.runPhase(attemptId, sessionId, lab, "now", lab.steps);
      const proving = lab.steps.filter((s) => s.verifyByReboot);
      if (proving.length > 0) {
        const boots = await this.rebootMachines(attemptId, sessionId, [...new Set(proving.map((s) => s.machine))]);
        await this.runPhase(attemptId, sessionId, lab, "afterReboot", proving, boots);
      }
      await this.finish(attemptId, sessionId, lab);
      log.info({ sessionId, ms: Date.now() - started }, "exam scored");
    } catch (error) {
      // The lease runs out and the next tick (here or elsewhere) resumes what is missing.
      log.error({ sessionId, err: (error as Error).message }, "exam scoring failed; it resumes when its lease runs out");
    } finally {
      clearInterval(renewal);
    }
  }

  /**
   * Runs the checks of `steps` in `phase` that have no result yet: machines in parallel, one
   * check at a time on each. After a reboot, a check counts only on the new boot (`boots`:
   * machine -> boot id before the reboot).
   */
  private async runPhase(
    attemptId: string,
    sessionId: string,
    lab: Lab,
    phase: ExamPhase,
    steps: LoadedStep[],
    boots?: Map<string, string | null>,
  ) {
    const { db } = this.deps;
    const done = new Set(
      (await db.examCheckResult.findMany({ where: { attemptId, phase }, select: { taskId: true, checkId: true } })).map(
        (r) => `${r.taskId}\u0000${r.checkId}`,
      ),
    );
    const byMachine = new Map<string, LoadedStep[]>();
    for (const step of steps) byMachine.set(step.machine, [...(byMachine.get(step.machine) ?? []), step]);
    await Promise.all(
      [...byMachine].map(async ([machine, machineSteps]) => {
        for (const step of machineSteps) {
          for (const check of scoringChecks(step)) {
            if (done.has(`${step.id}\u0000${check.id}`)) continue;
            const endpoint = await machineEndpoint(db, sessionId, machine);
            const script = step.scoring?.find((c) => c.id === check.id)?.script ?? step.check;
            const body = `${CHECK_LIB}\n${lab.checkLib}\n${script.content}`;
            const result: ScriptResult = endpoint
              ? await this.onNewBoot(endpoint, body, step.timeoutSeconds, boots?.get(machine))
              : { outcome: "error", exitCode: null, output: `${machine}: not a machine of this session`, durationMs: 0 };
            await db.examCheckResult.createMany({
              data: [
                {
                  attemptId,
                  taskId: step.id,
                  checkId: check.id,
                  phase,
                  machine,
                  outcome: result.outcome,
                  output: result.output,
                  durationMs: result.durationMs,
                },
              ],
              skipDuplicates: true,
            });
          }
        }
      }),
    );
  }

  /** Runs a check; with `bootBefore` (after a reboot) it fails unless the machine is on another boot than then. */
  private async onNewBoot(
    endpoint: NonNullable<Awaited<ReturnType<typeof machineEndpoint>>>,
    body: string,
    timeoutSeconds: number,
    bootBefore: string | null | undefined,
  ): Promise<ScriptResult> {
    if (bootBefore === undefined) return this.deps.pool.run(endpoint, body, timeoutSeconds);
    const nonce = newNonce();
    const result = await this.deps.pool.run(endpoint, bootFactsScript(nonce) + body, timeoutSeconds);
    const { facts, output } = takeBootFacts(result.output, nonce);
    if (result.outcome !== "pass") return { ...result, output };
    if (!facts || facts.bootId === bootBefore || bootBefore === null)
      return {
        ...result,
        outcome: "fail",
        output: `${output}\n(the machine is not on a new boot: the check cannot judge what holds after a reboot)`.trim(),
      };
    return { ...result, output };
  }

  /**
   * Reboots each machine once (a resumed scoring does not reboot one that is on a new boot
   * already) and waits for its new boot; returns machine -> boot id before (null: unknown, so
   * nothing after the reboot can count).
   */
  private async rebootMachines(attemptId: string, sessionId: string, machines: string[]): Promise<Map<string, string | null>> {
    const { db } = this.deps;
    const row = await db.examAttempt.findUniqueOrThrow({ where: { id: attemptId }, select: { bootsBefore: true } });
    const before = { ...((row.bootsBefore ?? {}) as Record<string, string | null>) };
    for (const machine of machines) if (!(machine in before)) before[machine] = await this.bootId(sessionId, machine);
    await db.examAttempt.update({ where: { id: attemptId }, data: { bootsBefore: before } });
    await Promise.all(machines.map((machine) => this.rebootOne(sessionId, machine, before[machine] ?? null)));
    return new Map(machines.map((m) => [m, before[m] ?? null]));
  }

  private async rebootOne(sessionId: string, machine: string, bootBefore: string | null): Promise<void> {
    const { db, pool, provider, log } = this.deps;
    const current = await this.bootId(sessionId, machine);
    if (bootBefore !== null && current !== null && current !== bootBefore) return; // rebooted before a takeover
    const started = Date.now();
    await requestReboot(db, pool, sessionId, machine).catch(() => false);
    let hard = false;
    while (Date.now() - started < this.options.rebootMs) {
      await new Promise((r) => setTimeout(r, BOOT_POLL_MS));
      const now = await this.bootId(sessionId, machine);
      if (now !== null && now !== bootBefore) return;
      const elapsed = Date.now() - started;
      const due = hardRestartDue(now !== null, elapsed, this.options);
      if (!hard && due) {
        hard = true;
        const why = due === "ignored" ? "the machine ignored a clean reboot" : "no answer since the clean reboot request";
        log.warn({ sessionId, machine, ms: elapsed }, `exam scoring: ${why}; restarting it`);
        await restartMachine(db, provider, sessionId, machine).catch(() => false);
      }
    }
    log.warn({ sessionId, machine }, "exam scoring: no new boot in time");
  }

  /** The machine's boot id as the kernel says (null: unreachable, or a mount covers it). */
  private async bootId(sessionId: string, machine: string): Promise<string | null> {
    const endpoint = await machineEndpoint(this.deps.db, sessionId, machine);
    if (!endpoint) return null;
    const nonce = newNonce();
    const result = await this.deps.pool.run(endpoint, bootFactsScript(nonce), 10, { connectTimeoutMs: 10_000 });
    return takeBootFacts(result.output, nonce).facts?.bootId ?? null;
  }

  private async finish(attemptId: string, sessionId: string, lab: Lab): Promise<void> {
    const { db } = this.deps;
    const attempt = await db.examAttempt.findUniqueOrThrow({ where: { id: attemptId }, select: { passPercent: true } });
    const results = await db.examCheckResult.findMany({ where: { attemptId } });
    const { score, maxScore } = scoreExam(lab, results);
    const done = await db.examAttempt.updateMany({
      where: { id: attemptId, state: "scoring", leaseBy: this.owner },
      data: {
        state: "scored",
        score,
        maxScore,
        passed: passes(score, maxScore, attempt.passPercent),
        scoredAt: new Date(),
        leaseUntil: null,
        leaseBy: null,
      },
    });
    if (done.count === 1) this.deps.onChange(sessionId);
  }
}
