/**
 * The one place that moves a lab session between states. Every move is a conditional write
 * (`WHERE state IN from`), so of several processes trying the same move exactly one wins, and a
 * move the table below does not list is refused by the code that asks for it.
 *
 *   starting  -> ready       the machines are up and set up (or resumed)
 *   starting  -> suspended   a resume that failed: the machines are still there, powered off
 *   starting  -> ending      a new start that failed or whose process died
 *   ready     -> suspended   idle too long (machines powered off)
 *   suspended -> starting    a resume began
 *   live      -> ending      the learner, the clock or an admin ended it (endReason written here, once)
 *   ending    -> ended       the provider released the machines
 *
 * `starting` and `ending` are work one process does: it holds a lease (`leaseUntil`) and extends
 * it while it works. The reconciler (run at start-up and by every sweep) takes over sessions
 * whose lease ran out: a start whose process died is failed (or, for a resume, put back to
 * suspended), and a teardown is retried until the provider succeeds.
 */
import type { Db } from "../db/client";
import type { LabSessionState, SessionEndReason } from "../db/generated/client";
import type { MachineProvider } from "../machines/provider";

/** Sessions that hold a learner's place in a lab (and their machines). */
export const LIVE_STATES = ["starting", "ready", "suspended"] as const satisfies readonly LabSessionState[];

/** How long a start or teardown lease lasts without being extended, ms. */
export const LEASE_MS = 60_000;
/** A working process extends its lease this often, ms. */
export const LEASE_RENEW_MS = 15_000;

const TRANSITIONS: Record<LabSessionState, readonly LabSessionState[]> = {
  starting: ["ready", "suspended", "ending"],
  ready: ["suspended", "ending"],
  suspended: ["starting", "ending"],
  ending: ["ended"],
  ended: [],
};

export class IllegalTransitionError extends Error {}

/**
 * Moves a session from one of `from` to `to` if it is in one of them now; true when this call
 * made the move. `data` is written with it (only by the winner). Starting and ending moves take
 * a lease for the caller.
 */
export async function advance(
  db: Db,
  sessionId: string,
  from: readonly LabSessionState[],
  to: LabSessionState,
  data: {
    endReason?: SessionEndReason;
    expiresAt?: Date | null;
    currentStepSince?: Date;
    lastActivityAt?: Date;
    readyAt?: Date;
    startStage?: string | null;
    startDetail?: string | null;
    startError?: string;
  } = {},
): Promise<boolean> {
  for (const f of from) if (!TRANSITIONS[f].includes(to)) throw new IllegalTransitionError(`session state ${f} cannot move to ${to}`);
  const leased = to === "starting" || to === "ending";
  const claimed = await db.labSession.updateMany({
    where: { id: sessionId, state: { in: [...from] } },
    data: {
      ...data,
      state: to,
      leaseUntil: leased ? new Date(Date.now() + LEASE_MS) : null,
      ...(to === "ended" ? { endedAt: new Date() } : {}),
    },
  });
  return claimed.count === 1;
}

/**
 * Runs `work` while holding the session's lease (`starting` or `ending`), extending it every
 * LEASE_RENEW_MS so the reconciler does not take over a slow but live start (a cold boot under
 * load takes minutes).
 */
export async function withLease<T>(db: Db, sessionId: string, work: () => Promise<T>): Promise<T> {
  const renew = setInterval(() => {
    void db.labSession
      .updateMany({
        where: { id: sessionId, state: { in: ["starting", "ending"] } },
        data: { leaseUntil: new Date(Date.now() + LEASE_MS) },
      })
      .catch(() => undefined);
  }, LEASE_RENEW_MS);
  try {
    return await work();
  } finally {
    clearInterval(renew);
  }
}

/**
 * Releases an `ending` session's machines and moves it to `ended`; on a provider failure it
 * stays `ending` (the reconciler retries). True when it is ended now.
 */
export async function finishEnding(db: Db, provider: MachineProvider, sessionId: string): Promise<boolean> {
  const session = await db.labSession.findUnique({ where: { id: sessionId }, include: { machines: true } });
  if (!session || session.state !== "ending") return false;
  await withLease(db, sessionId, () => provider.destroy(sessionId, session.machines));
  return advance(db, sessionId, ["ending"], "ended");
}

export interface ReconcileReport {
  /** New starts whose process died: failed (their machines released). */
  failedStarts: string[];
  /** Resumes whose process died: back to suspended. */
  revertedResumes: string[];
  /** Teardowns that finished on this pass. */
  ended: string[];
  /** Teardowns that failed again (retried on the next pass). */
  stillEnding: string[];
}

/**
 * Takes over work whose process died: stale `starting` sessions are failed (a new start) or put
 * back to suspended (a resume: it had been ready before, readyAt), and `ending`
 * sessions whose lease ran out get their teardown retried. Each session is claimed by taking its
 * lease with a conditional write, so two processes never work on the same one.
 */
export async function reconcileSessions(
  db: Db,
  provider: MachineProvider,
  options: { now?: Date; onError?: (sessionId: string, error: Error) => void } = {},
): Promise<ReconcileReport> {
  const now = options.now ?? new Date();
  const report: ReconcileReport = { failedStarts: [], revertedResumes: [], ended: [], stillEnding: [] };
  const stale = { OR: [{ leaseUntil: null }, { leaseUntil: { lt: now } }] };
  const starting = await db.labSession.findMany({ where: { state: "starting", ...stale }, select: { id: true, readyAt: true } });
  for (const s of starting) {
    if (s.readyAt !== null) {
      if (await advance(db, s.id, ["starting"], "suspended")) report.revertedResumes.push(s.id);
    } else if (await advance(db, s.id, ["starting"], "ending", { endReason: "failed" })) {
      report.failedStarts.push(s.id);
    }
  }
  const ending = await db.labSession.findMany({ where: { state: "ending", ...stale }, select: { id: true } });
  for (const { id } of ending) {
    // Take the lease first: of two reconciling processes, one retries this teardown.
    const claimed = await db.labSession.updateMany({
      where: { id, state: "ending", ...stale },
      data: { leaseUntil: new Date(Date.now() + LEASE_MS) },
    });
    if (claimed.count === 0) continue;
    try {
      if (await finishEnding(db, provider, id)) report.ended.push(id);
    } catch (error) {
      report.stillEnding.push(id);
      options.onError?.(id, error as Error);
    }
  }
  return report;
}
