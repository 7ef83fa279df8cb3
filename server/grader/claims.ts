/**
 * Check claims: every server process runs a grader, and each check of a session runs on exactly
 * one of them. A session's row holds the shared schedule: `gradeDueAt` (the next poll),
 * `checkUntil` (a check is running until then: a lease) and `checkBy` (whose lease it is). A
 * process runs a check only after its claim set the lease; the others skip the row.
 *
 * Polls are claimed in batches: one `UPDATE … FROM (SELECT … ORDER BY gradeDueAt LIMIT n FOR
 * UPDATE SKIP LOCKED)` takes up to n due sessions, most overdue first, and returns what their
 * checks need (lab, step, machines), so a poll costs no read of its own and two processes never
 * fight over one row. The lease is short (CHECK_LEASE_S) and renewed while the check runs
 * (renewChecks), so a process that died mid-check holds its sessions for seconds, not for the
 * check's timeout. Times are the database's clock, so processes on hosts with skewed clocks still
 * agree. Timestamps are `timestamp(3)` in UTC (Prisma's mapping), hence `now() AT TIME ZONE 'UTC'`.
 */
import type { Db } from "../db/client";
import { Prisma } from "../db/generated/client";
import type { PendingProof } from "./reboot-proof";
import type { SshEndpoint } from "../ssh/connect";

/** A claim's lease, s: renewed every RENEW_EVERY_MS while the check runs, so it only matters when its process died. */
export const CHECK_LEASE_S = 10;
/** How often a process renews the leases of its running checks, ms (a quarter of the lease: three renewals may fail before it lapses). */
export const RENEW_EVERY_MS = (CHECK_LEASE_S * 1000) / 4;

/** One machine of a claimed session, as stored: an SSH endpoint whose private key may still be sealed, and the row's id. */
export interface ClaimedMachine extends SshEndpoint {
  id: string;
}

/** A session this process has claimed a check of: what the check needs, read by the claim itself. */
export interface ClaimedSession {
  id: string;
  labSlug: string;
  /** The pinned lab version (null: a session from before versions, pinned on first use). */
  labVersion: string | null;
  currentStepId: string | null;
  /** The session's "passed now" record (reboot-proof.ts), if it has one. */
  proof: PendingProof | null;
  machines: ClaimedMachine[];
}

interface ClaimRow {
  id: string;
  labSlug: string;
  labVersion: string | null;
  currentStepId: string | null;
  proofStepId: string | null;
  proofBootId: string | null;
  proofPassedAt: Date | null;
  machines: ClaimedMachine[] | string | null;
}

const claimed = (rows: ClaimRow[]): ClaimedSession[] =>
  rows.map((r) => ({
    id: r.id,
    labSlug: r.labSlug,
    labVersion: r.labVersion,
    currentStepId: r.currentStepId,
    proof:
      r.proofStepId && r.proofBootId && r.proofPassedAt
        ? { stepId: r.proofStepId, bootId: r.proofBootId, passedAt: r.proofPassedAt }
        : null,
    machines: (typeof r.machines === "string" ? JSON.parse(r.machines) : r.machines) ?? [],
  }));

/** The session's reboot-proof record (reboot-proof.ts). */
const PROOF = Prisma.raw(`s."proofStepId", s."proofBootId", s."proofPassedAt"`);

/** The claimed session's machines, as one JSON array (a correlated subquery: no row multiplies). */
const MACHINES =
  Prisma.raw(`(SELECT coalesce(json_agg(json_build_object('id', m."id", 'name', m."name", 'host', m."host", 'port', m."port", 'user', m."user",
    'privateKey', m."privateKey", 'hostKey', m."hostKey")), '[]'::json) FROM "Machine" m WHERE m."sessionId" = s."id") AS "machines"`);

/**
 * Claims up to `limit` due polls for grader `owner`: ready sessions whose due time has come (or
 * was never set) and whose check nobody runs, sessions graded at the end excepted (exams), most overdue first; rows another process is
 * claiming at this moment are skipped, not waited for.
 */
export async function claimDue(db: Db, owner: string, limit: number): Promise<ClaimedSession[]> {
  if (limit <= 0) return [];
  return claimed(
    await db.$queryRaw<ClaimRow[]>`
    WITH t AS (SELECT (now() AT TIME ZONE 'UTC') AS at),
    picked AS (
      SELECT s."id" FROM "LabSession" s, t
       WHERE s."state" = 'ready' AND s."completedAt" IS NULL
         AND NOT s."gradedAtEnd"
         AND (s."checkUntil" IS NULL OR s."checkUntil" < t.at)
         AND (s."gradeDueAt" IS NULL OR s."gradeDueAt" <= t.at)
       ORDER BY s."gradeDueAt" ASC NULLS FIRST
       LIMIT ${limit}::int
       FOR UPDATE OF s SKIP LOCKED
    )
    UPDATE "LabSession" s
       SET "checkUntil" = t.at + make_interval(secs => ${CHECK_LEASE_S}::int), "checkBy" = ${owner}
      FROM picked, t
     WHERE s."id" = picked."id"
    RETURNING s."id", s."labSlug", s."labVersion", s."currentStepId", ${PROOF}, ${MACHINES}`,
  );
}

/**
 * Claims the next check of one session for grader `owner` whenever no other check of it runs,
 * due or not (Check button, Enter nudge); null when one runs or the session is not gradable.
 */
export async function claimNow(db: Db, owner: string, sessionId: string): Promise<ClaimedSession | null> {
  const rows = claimed(
    await db.$queryRaw<ClaimRow[]>`
    UPDATE "LabSession" s
       SET "checkUntil" = (now() AT TIME ZONE 'UTC') + make_interval(secs => ${CHECK_LEASE_S}::int), "checkBy" = ${owner}
     WHERE s."id" = ${sessionId} AND s."state" = 'ready' AND s."completedAt" IS NULL
       AND NOT s."gradedAtEnd"
       AND (s."checkUntil" IS NULL OR s."checkUntil" < (now() AT TIME ZONE 'UTC'))
    RETURNING s."id", s."labSlug", s."labVersion", s."currentStepId", ${PROOF}, ${MACHINES}`,
  );
  return rows[0] ?? null;
}

/** Extends grader `owner`'s leases of the given sessions (its running checks) by CHECK_LEASE_S from now. */
export async function renewChecks(db: Db, owner: string, sessionIds: string[]): Promise<void> {
  if (sessionIds.length === 0) return;
  await db.$queryRaw`
    UPDATE "LabSession"
       SET "checkUntil" = (now() AT TIME ZONE 'UTC') + make_interval(secs => ${CHECK_LEASE_S}::int)
     WHERE "id" = ANY(${sessionIds}::text[]) AND "checkBy" = ${owner} AND "checkUntil" IS NOT NULL
    RETURNING 1`;
}

/** Ends grader `owner`'s check of a session (if the lease is still its own); the next poll is due `nextInMs` from now. */
export async function releaseCheck(db: Db, owner: string, sessionId: string, nextInMs: number): Promise<void> {
  await db.$queryRaw`
    UPDATE "LabSession"
       SET "checkUntil" = NULL, "checkBy" = NULL,
           "gradeDueAt" = (now() AT TIME ZONE 'UTC') + make_interval(secs => ${nextInMs / 1000}::double precision)
     WHERE "id" = ${sessionId} AND "checkBy" = ${owner}
    RETURNING 1`;
}

/** Whether a check of the session is running somewhere now (for the Check button to wait on). */
export async function checkRunning(db: Db, sessionId: string): Promise<boolean> {
  const rows = await db.$queryRaw<{ running: boolean }[]>`
    SELECT ("checkUntil" IS NOT NULL AND "checkUntil" >= (now() AT TIME ZONE 'UTC')) AS running FROM "LabSession" WHERE "id" = ${sessionId}`;
  return rows[0]?.running ?? false;
}

/**
 * How long the oldest due poll that no process has started has been waiting, ms (0: none). Over
 * all processes: a lag growing past the interval means the graders together cannot keep up.
 */
export async function oldestDueLagMs(db: Db): Promise<number> {
  const rows = await db.$queryRaw<{ lag: number | null }[]>`
    SELECT (EXTRACT(EPOCH FROM (now() AT TIME ZONE 'UTC') - min("gradeDueAt")) * 1000)::double precision AS lag
      FROM "LabSession"
     WHERE "state" = 'ready' AND "completedAt" IS NULL AND "gradeDueAt" <= (now() AT TIME ZONE 'UTC')
       AND ("checkUntil" IS NULL OR "checkUntil" < (now() AT TIME ZONE 'UTC'))`;
  return Math.max(0, rows[0]?.lag ?? 0);
}
