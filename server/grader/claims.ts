/**
 * Check claims: every server process runs a grader, and each check of a session runs on exactly
 * one of them. A session's row holds the shared schedule: `gradeDueAt` (the next poll) and
 * `checkUntil` (a check is running until then: a lease, so a process that died mid-check blocks
 * nobody for longer than the check's timeout). A process runs a check only after winning the
 * conditional UPDATE below; the loser leaves it. Times are the database's clock, so processes on
 * hosts with skewed clocks still agree.
 *
 * Timestamps are `timestamp(3)` in UTC (Prisma's mapping), hence `now() AT TIME ZONE 'UTC'`.
 */
import type { Db } from "../db/client";

/** Slack added to a check's own timeout for its lease (SSH connect, recording the run), s. */
export const LEASE_SLACK_S = 15;

/**
 * Claims the next check of a session for this process. `due`: a poll, only when its due time has
 * come; `now`: the learner asked (Check button, Enter), whenever no other check runs. True when
 * this process must run it (and then release it).
 */
export async function claimCheck(db: Db, sessionId: string, kind: "due" | "now", timeoutSeconds: number): Promise<boolean> {
  const lease = timeoutSeconds + LEASE_SLACK_S;
  const anyTime = kind === "now";
  const claimed = await db.$executeRaw`
    UPDATE "LabSession"
       SET "checkUntil" = (now() AT TIME ZONE 'UTC') + make_interval(secs => ${lease}::int)
     WHERE "id" = ${sessionId} AND "state" = 'ready' AND "completedAt" IS NULL
       AND ("checkUntil" IS NULL OR "checkUntil" < (now() AT TIME ZONE 'UTC'))
       AND (${anyTime}::boolean OR "gradeDueAt" IS NULL OR "gradeDueAt" <= (now() AT TIME ZONE 'UTC'))`;
  return claimed === 1;
}

/** Ends this process's check of a session; the next poll is due `nextInMs` from now. */
export async function releaseCheck(db: Db, sessionId: string, nextInMs: number): Promise<void> {
  await db.$executeRaw`
    UPDATE "LabSession"
       SET "checkUntil" = NULL,
           "gradeDueAt" = (now() AT TIME ZONE 'UTC') + make_interval(secs => ${nextInMs / 1000}::double precision)
     WHERE "id" = ${sessionId}`;
}

/** Whether a check of the session is running somewhere now (for the Check button to wait on). */
export async function checkRunning(db: Db, sessionId: string): Promise<boolean> {
  const rows = await db.$queryRaw<{ running: boolean }[]>`
    SELECT ("checkUntil" IS NOT NULL AND "checkUntil" >= (now() AT TIME ZONE 'UTC')) AS running FROM "LabSession" WHERE "id" = ${sessionId}`;
  return rows[0]?.running ?? false;
}
