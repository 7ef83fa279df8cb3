/**
 * Where a lab session's start is: the stage the starting process is in, written to the
 * session's row so any server process can show it (the lab page polls `GET
 * /api/sessions/:id/start`), and the queue of starts the host has no room for yet.
 *
 *   queued    the machine host is full (memory, or boots in flight): the start waits its turn,
 *             oldest first, and goes on by itself when room frees; it never fails for this
 *             unless it waited QUEUE_MAX_WAIT_MS
 *   machines  machines are being handed out, booted or restored
 *   setup     the lab's setup scripts run (detail: the ones still running, on which machine, so
 *             the slow one is what stays on the page)
 *   saving    the set-up state is being saved for later resets
 */
import type { Db } from "../db/client";

export type StartStage = "queued" | "machines" | "setup" | "saving";
/**
 * Where a session's machines came from: a pool set prepared for the lab, a set started from the
 * lab's saved template, a booted pool set, a cold boot, or a suspended session's own.
 */
export type StartSource = "prepared" | "snapshot" | "pool" | "cold" | "resume";

/** How often a queued start looks whether it is its turn and the host has room, ms. */
export const QUEUE_POLL_MS = 2_000;
/** Longest a start waits in the queue before it gives up (no capacity), ms. */
export const QUEUE_MAX_WAIT_MS = 30 * 60_000;

/**
 * Sessions holding machines now: ready, or starting past the queue. (A NOT on a nullable column is
 * NULL for NULL rows in SQL: ready sessions, whose stage is null, must be asked for by state.)
 */
export const LIVE_NOT_QUEUED = {
  OR: [{ state: "ready" as const }, { state: "starting" as const, OR: [{ startStage: null }, { startStage: { not: "queued" } }] }],
};

/** Writes the start's stage (only while the session is starting; a no-op after). */
export async function setStartStage(db: Db, sessionId: string, stage: StartStage, detail: string | null = null): Promise<void> {
  await db.labSession.updateMany({ where: { id: sessionId, state: "starting" }, data: { startStage: stage, startDetail: detail } });
}

/**
 * The setup stage's progress for `runLabSetup`'s onScript: the detail names every script still
 * running ("node01.sh (node01)"), in the order they started. The machines' scripts run at once, so
 * "the last one started" would hide the slow one behind a fast one that started after it. Writes
 * are chained so that the row ends with the latest state, whatever order the database answers in.
 */
export function setupProgress(
  db: Db,
  sessionId: string,
): {
  onScript: (machine: string, script: string) => () => void;
  /** Resolves once every write is done (before the start moves on to its next stage). */
  settled: () => Promise<void>;
} {
  const running: string[] = [];
  let writes = Promise.resolve();
  const write = () => {
    const detail = running.length ? running.join(", ") : null;
    writes = writes.then(() => setStartStage(db, sessionId, "setup", detail)).catch(() => undefined);
  };
  return {
    onScript: (machine, script) => {
      const entry = `${script} (${machine})`;
      running.push(entry);
      write();
      return () => {
        running.splice(running.indexOf(entry), 1);
        write();
      };
    },
    settled: () => writes,
  };
}

/** What the lab page shows about a session's start. */
export interface StartView {
  sessionId: string;
  state: "starting" | "ready" | "suspended" | "ending" | "ended";
  stage: StartStage | null;
  detail: string | null;
  source: StartSource | null;
  /** 1 = next in line (only while queued). */
  position: number | null;
  /** Why it failed (ended with endReason failed). */
  error: string | null;
  /** Seconds since the start began. */
  elapsedSeconds: number;
}

/** Starts queued ahead of this one (same provider), oldest first. */
export async function queuedAhead(db: Db, session: { id: string; provider: string; createdAt: Date }): Promise<number> {
  return db.labSession.count({
    where: {
      state: "starting",
      startStage: "queued",
      provider: session.provider,
      createdAt: { lt: session.createdAt },
      id: { not: session.id },
    },
  });
}

export async function startView(db: Db, sessionId: string): Promise<StartView | null> {
  const s = await db.labSession.findUnique({
    where: { id: sessionId },
    select: {
      id: true,
      state: true,
      provider: true,
      createdAt: true,
      startStage: true,
      startDetail: true,
      startSource: true,
      startError: true,
      endReason: true,
    },
  });
  if (!s) return null;
  const stage = s.state === "starting" ? (s.startStage as StartStage | null) : null;
  return {
    sessionId: s.id,
    state: s.state,
    stage,
    detail: stage ? s.startDetail : null,
    source: s.startSource as StartSource | null,
    position: stage === "queued" ? (await queuedAhead(db, s)) + 1 : null,
    error: s.endReason === "failed" ? (s.startError ?? "") : null,
    elapsedSeconds: Math.round((Date.now() - s.createdAt.getTime()) / 1000),
  };
}
