/**
 * Check history as transitions and counts. A session's newest CheckRun row is a streak of
 * identical results; a check whose result (step, machine, trigger, outcome, exit code, output)
 * equals it adds to its count and moves its `lastAt`, anything else starts a new row. So a
 * learner polled every 2 s for an hour on one failing step writes one row, not 1,800, and the
 * newest failing output of each step is always kept. A manual Check is never folded into a
 * streak: each is its own row (rate-limited per learner), so recordings can mark every one.
 * Rows older than the retention are pruned.
 *
 * One statement per run (the session has one check at a time, claims.ts, so there is no race
 * on its newest row), which may also release the run's claim; times are the database's clock
 * like the claims'.
 */
import { randomUUID } from "node:crypto";
import type { Db } from "../db/client";
import type { ScriptResult } from "../ssh/exec";

export interface CheckRecord {
  sessionId: string;
  stepId: string;
  machine: string;
  trigger: "poll" | "manual";
  result: ScriptResult;
}

/** Releasing the check's claim in the same statement (claims.ts releaseCheck): grader `owner`'s lease ends, the next poll is due `nextInMs` from now. */
export interface CheckRelease {
  owner: string;
  nextInMs: number;
}

/**
 * Records one check run, and with `release` ends its claim in the same statement (a poll's one
 * write). Returns true when it started a new row (the result changed: something the dashboard
 * shows), false when it only counted a repeat of the newest one.
 */
export async function recordCheckRun(db: Db, r: CheckRecord, release?: CheckRelease): Promise<boolean> {
  const { sessionId, stepId, machine, trigger, result } = r;
  const releasing = release !== undefined;
  const rows = await db.$queryRaw<{ inserted: boolean }[]>`
    WITH t AS (SELECT (now() AT TIME ZONE 'UTC') AS at),
    released AS (
      UPDATE "LabSession"
         SET "checkUntil" = NULL, "checkBy" = NULL,
             "gradeDueAt" = (SELECT at FROM t) + make_interval(secs => ${(release?.nextInMs ?? 0) / 1000}::double precision)
       WHERE ${releasing}::boolean AND "id" = ${sessionId} AND "checkBy" = ${release?.owner ?? null}::text
      RETURNING 1
    ),
    prev AS (
      SELECT "id", "stepId", "machine", "trigger", "outcome", "exitCode", "output", "lastAt"
        FROM "CheckRun" WHERE "sessionId" = ${sessionId} ORDER BY "lastAt" DESC LIMIT 1
    ),
    gap AS (
      SELECT round(EXTRACT(EPOCH FROM (t.at - make_interval(secs => ${result.durationMs}::int / 1000.0) - prev."lastAt")) * 1000)::int AS ms
        FROM t, prev
    ),
    upd AS (
      UPDATE "CheckRun" c
         SET "count" = c."count" + 1, "lastAt" = t.at, "durationMs" = ${result.durationMs}::int,
             "minGapMs" = LEAST(c."minGapMs", (SELECT ms FROM gap))
        FROM prev, t
       WHERE ${trigger}::"CheckTrigger" = 'poll'::"CheckTrigger" AND c."id" = prev."id" AND prev."stepId" = ${stepId} AND prev."machine" = ${machine}
         AND prev."trigger" = ${trigger}::"CheckTrigger" AND prev."outcome" = ${result.outcome}::"CheckOutcome"
         AND prev."exitCode" IS NOT DISTINCT FROM ${result.exitCode}::int AND prev."output" = ${result.output}
      RETURNING c."id"
    ),
    ins AS (
      INSERT INTO "CheckRun" ("id", "sessionId", "stepId", "machine", "trigger", "outcome", "exitCode", "output", "durationMs", "createdAt", "lastAt", "count", "minGapMs")
      SELECT ${randomUUID()}, ${sessionId}, ${stepId}, ${machine}, ${trigger}::"CheckTrigger", ${result.outcome}::"CheckOutcome",
             ${result.exitCode}::int, ${result.output}, ${result.durationMs}::int, t.at, t.at, 1, (SELECT ms FROM gap)
        FROM t WHERE NOT EXISTS (SELECT 1 FROM upd)
      RETURNING "id"
    )
    SELECT true AS inserted FROM ins UNION ALL SELECT false FROM upd`;
  return rows[0]?.inserted ?? true;
}

/** Rows deleted per statement by pruneCheckRuns (keeps each DELETE's locks and WAL short). */
const PRUNE_BATCH_ROWS = 5_000;

/**
 * Deletes check history whose newest run is older than `retentionDays`, in batches. The newest
 * row of each step of a session that is not over is kept whatever its age (it is the step's
 * latest output, which the dashboard shows). Returns the rows deleted.
 */
export async function pruneCheckRuns(db: Db, retentionDays: number): Promise<number> {
  let total = 0;
  for (;;) {
    const deleted = await db.$executeRaw`
      DELETE FROM "CheckRun" WHERE "id" IN (
        SELECT r."id" FROM "CheckRun" r JOIN "LabSession" s ON s."id" = r."sessionId"
         WHERE r."lastAt" < (now() AT TIME ZONE 'UTC') - make_interval(days => ${retentionDays}::int)
           AND (s."state" IN ('ending', 'ended')
                OR EXISTS (SELECT 1 FROM "CheckRun" n WHERE n."sessionId" = r."sessionId" AND n."stepId" = r."stepId" AND n."lastAt" > r."lastAt"))
         LIMIT ${PRUNE_BATCH_ROWS}::int)`;
    total += deleted;
    if (deleted < PRUNE_BATCH_ROWS) return total;
  }
}
