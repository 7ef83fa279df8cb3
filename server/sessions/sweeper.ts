/**
 * Session lifecycle in the background: every sweep ends sessions whose time is up and suspends
 * the machines of sessions nobody has touched for the idle time (lab-sessions.ts does the work);
 * their terminals close with the reason (close code 4410). Also records learner activity from
 * the terminal gateway, at most one database write per session per ACTIVITY_WRITE_MS.
 */
import type { Logger } from "pino";
import type { Db } from "../db/client";
import type { MachineProvider } from "../machines/provider";
import type { TerminalRegistry } from "../terminal/registry";
import { sweepSessions, touchSession, type SweepReport } from "./lab-sessions";
import { reconcileSessions, type ReconcileReport } from "./lifecycle";

/** How often sessions are swept, ms. Expiry and idleness are judged to within this. */
export const SWEEP_INTERVAL_MS = 30_000;
/** Activity is written at most this often per session, ms (idle times are minutes). */
const ACTIVITY_WRITE_MS = 30_000;

export class SessionSweeper {
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<SweepReport> | null = null;
  private readonly lastWrite = new Map<string, number>();

  constructor(
    private readonly deps: { db: Db; provider: MachineProvider; terminals: TerminalRegistry; log: Logger },
    private readonly options: { idleMs: number; intervalMs?: number },
  ) {}

  start(): void {
    if (this.timer) return;
    this.timer = setInterval(() => void this.sweep(), this.options.intervalMs ?? SWEEP_INTERVAL_MS);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  /** One sweep now (a running one is joined, not doubled). */
  sweep(now?: Date): Promise<SweepReport> {
    this.running ??= this.reconcile(now)
      .then(() =>
        sweepSessions(this.deps.db, this.deps.provider, {
          now,
          idleMs: this.options.idleMs,
          onOver: (sessionId, why) => {
            this.lastWrite.delete(sessionId);
            this.deps.log.info({ sessionId, why }, "lab session is over for now");
            void this.deps.terminals.closeSession(sessionId, why);
          },
          onError: (sessionId, error) => this.deps.log.error({ sessionId, err: error.message }, "session sweep failed for a session"),
        }),
      )
      .catch((error: Error) => {
        this.deps.log.error({ err: error.message }, "session sweep failed");
        return { expired: [], suspended: [] };
      })
      .finally(() => (this.running = null));
    return this.running;
  }

  /**
   * Takes over starts and teardowns whose process died (server/sessions/lifecycle.ts); run at
   * start-up and before every sweep. Never throws.
   */
  async reconcile(now?: Date): Promise<ReconcileReport | null> {
    try {
      const report = await reconcileSessions(this.deps.db, this.deps.provider, {
        now,
        onError: (sessionId, error) => this.deps.log.warn({ sessionId, err: error.message }, "machine teardown failed; retried later"),
      });
      if (report.failedStarts.length + report.revertedResumes.length + report.ended.length > 0) {
        this.deps.log.info(report, "sessions reconciled");
      }
      return report;
    } catch (error) {
      this.deps.log.error({ err: (error as Error).message }, "session reconcile failed");
      return null;
    }
  }

  /** The learner did something in a session (typed in a terminal, ran a check). */
  activity(sessionId: string): void {
    const now = Date.now();
    if (now - (this.lastWrite.get(sessionId) ?? 0) < ACTIVITY_WRITE_MS) return;
    this.lastWrite.set(sessionId, now);
    touchSession(this.deps.db, sessionId).catch((error: Error) =>
      this.deps.log.warn({ sessionId, err: error.message }, "recording activity failed"),
    );
  }
}
