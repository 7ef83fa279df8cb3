/**
 * Check history at class scale, on embedded PostgreSQL (rows only, no machines): 1,000 learners
 * polled every 2 s.
 *  1. Rows: one simulated class hour per learner (a seeded model: minutes per step, failing
 *     outputs that change as the learner works, Check-button presses, a pass per step). Before:
 *     one CheckRun row per check. After: the rows the real recordCheckRun writes for the same
 *     sequences, run for --sample learners and scaled to 1,000.
 *  2. The dashboard grid at 1,000 learners, with each side's history table holding that hour:
 *     before = the old code's queries (sessions + completions, then one newest-failure lookup per
 *     learner on the old one-row-per-check table and index); after = gridRows (one query), with
 *     its EXPLAIN ANALYZE. Both median of --repeat runs.
 *  3. How often an open dashboard re-fetches: before, every check sent a notice (500/s; the page
 *     debounces to one fetch per 300 ms); after, only a new history row does.
 *
 *   npx tsx bench/check-history.ts [--learners 1000] [--sample 20] [--repeat 15]
 */
import { performance } from "node:perf_hooks";
import pg from "pg";
import { z } from "zod";
import { gridQuery, gridRows } from "../server/cohorts/dashboard";
import { Prisma } from "../server/db/generated/client";
import { recordCheckRun } from "../server/grader/history";
import type { ScriptResult } from "../server/ssh/exec";
import { startTestDb } from "../server/testing/test-db";
import { benchFlags } from "./lib/flags";

const INTERVAL_S = 2; // grader poll interval, s (the default)
const HOUR_S = 3_600; // simulated class time, s
const CLASS_HOURS = 8; // hours of polling in a class day, for rows per day
const STEPS = ["s0", "s1", "s2", "s3", "s4"]; // the lab's steps
const DEBOUNCE_MS = 300; // CohortDashboard re-fetches at most once per this, ms

const Flags = z.object({
  learners: z.coerce.number().int().min(10).max(10_000).default(1_000),
  sample: z.coerce.number().int().min(1).max(200).default(20),
  repeat: z.coerce.number().int().min(3).max(100).default(15),
});

/** Deterministic PRNG (mulberry32), so before and after see the same class. */
function rng(seed: number) {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

interface Check {
  stepId: string;
  trigger: "poll" | "manual";
  result: ScriptResult;
}

/**
 * One learner's hour of checks: each step takes 4–16 min; its failing output changes 0–2 times
 * (the learner got further: "file missing" -> "wrong content" -> ...); about one Check-button
 * press per 3 min; the step's first passing poll moves on.
 */
function learnerHour(seed: number): Check[] {
  const r = rng(seed);
  const checks: Check[] = [];
  let step = 0;
  let t = 0;
  while (t < HOUR_S && step < STEPS.length) {
    const stepEnd = t + 240 + r() * 720;
    const changes = [0, 1, 2]
      .map(() => t + r() * (stepEnd - t))
      .sort((a, b) => a - b)
      .slice(0, Math.floor(r() * 3));
    for (; t < stepEnd && t < HOUR_S; t += INTERVAL_S) {
      const variant = changes.filter((c) => c <= t).length;
      const result: ScriptResult = { outcome: "fail", exitCode: 1, output: `step ${step}: not yet (${variant})`, durationMs: 40 };
      checks.push({ stepId: STEPS[step]!, trigger: r() < INTERVAL_S / 180 ? "manual" : "poll", result });
    }
    if (t < HOUR_S)
      checks.push({ stepId: STEPS[step]!, trigger: "poll", result: { outcome: "pass", exitCode: 0, output: "", durationMs: 40 } });
    step++;
    t += INTERVAL_S;
  }
  // A learner who finished early is not polled any more (completed sessions are not graded).
  return checks;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
async function timed(repeat: number, run: () => Promise<unknown>): Promise<number> {
  await run(); // warm
  const ms: number[] = [];
  for (let i = 0; i < repeat; i++) {
    const t0 = performance.now();
    await run();
    ms.push(performance.now() - t0);
  }
  return median(ms);
}

async function main() {
  const flags = benchFlags(Flags, "usage: npx tsx bench/check-history.ts [--learners N] [--sample N] [--repeat N]");
  const { db, url, stop } = await startTestDb();
  const client = new pg.Pool({ connectionString: url, max: 10 });
  // The database stops at the end while the pool may still hold an idle connection.
  client.on("error", () => undefined);
  try {
    // ---- 1. rows per hour -------------------------------------------------------------------
    const hours = Array.from({ length: flags.learners }, (_, i) => learnerHour(i + 1));
    const checksPerHour = hours.reduce((n, h) => n + h.length, 0);
    const sample = hours.slice(0, flags.sample);
    const sampleIds: string[] = [];
    let calls = 0;
    const t0 = performance.now();
    for (const [i, checks] of sample.entries()) {
      const s = await db.labSession.create({ data: { learnerId: `sample-${i}`, labSlug: "sample", provider: "static", state: "ready" } });
      sampleIds.push(s.id);
      for (const c of checks) {
        await recordCheckRun(db, { sessionId: s.id, machine: "node01", ...c });
        calls++;
      }
    }
    const recordMs = (performance.now() - t0) / calls;
    // Baseline in the same run: what the grader did before, one plain INSERT per check.
    const scratch = await db.labSession.create({ data: { learnerId: "baseline", labSlug: "sample", provider: "static", state: "ready" } });
    const INSERTS = 2_000;
    const ti = performance.now();
    for (let i = 0; i < INSERTS; i++) {
      await db.checkRun.create({
        data: {
          sessionId: scratch.id,
          stepId: "s0",
          machine: "node01",
          trigger: "poll",
          outcome: "fail",
          exitCode: 1,
          output: "not yet",
          durationMs: 40,
        },
      });
    }
    const insertMs = (performance.now() - ti) / INSERTS;
    await db.labSession.delete({ where: { id: scratch.id } });
    const sampleRows = await db.checkRun.count({ where: { sessionId: { in: sampleIds } } });
    const sampleChecks = sample.reduce((n, h) => n + h.length, 0);
    const afterPerHour = Math.round((sampleRows / sampleChecks) * checksPerHour);
    console.log(`learners ${flags.learners}, polled every ${INTERVAL_S} s, one simulated class hour (seeded model)`);
    console.log(`  checks per hour:                 ${checksPerHour}`);
    console.log(`  CheckRun rows per hour  before:  ${checksPerHour}   (one per check)`);
    console.log(
      `  CheckRun rows per hour  after:   ${afterPerHour}   (${sampleRows} rows for ${sampleChecks} real recordCheckRun calls of ${flags.sample} learners, scaled)`,
    );
    console.log(
      `  rows per ${CLASS_HOURS}-h class day before: ${checksPerHour * CLASS_HOURS}, after: ${afterPerHour * CLASS_HOURS}  (${(checksPerHour / afterPerHour).toFixed(0)}x fewer)`,
    );
    console.log(
      `  write per check: before (plain INSERT) ${insertMs.toFixed(2)} ms, after (recordCheckRun, one statement) ${recordMs.toFixed(2)} ms`,
    );

    // ---- 2. the grid at 1,000 learners ------------------------------------------------------
    const cohort = await db.cohort.create({
      data: {
        name: "bench",
        startsAt: new Date(Date.now() - HOUR_S * 1000),
        endsAt: new Date(Date.now() + HOUR_S * 1000),
        labs: ["bench"],
      },
    });
    await client.query(
      `INSERT INTO "User" ("id", "name", "email", "role") SELECT 'u' || i, 'learner ' || i, 'u' || i || '@bench.test', 'learner' FROM generate_series(1, $1::int) i`,
      [flags.learners],
    );
    await client.query(
      `INSERT INTO "CohortMember" ("cohortId", "userId", "role") SELECT $1, 'u' || i, 'learner' FROM generate_series(1, $2::int) i`,
      [cohort.id, flags.learners],
    );
    // Each learner's session on the step the model has them on at the hour's end.
    const stepAtEnd = hours.map((h) => Math.min(STEPS.length - 1, h.filter((c) => c.result.outcome === "pass").length));
    await client.query(
      `INSERT INTO "LabSession" ("id", "labSlug", "learnerId", "state", "provider", "updatedAt", "currentStepId", "currentStepSince", "createdAt")
       SELECT 'ls' || i, 'bench', 'u' || i, 'ready', 'static', now(), 's' || ($2::int[])[i], now() - interval '5 minutes', now() - interval '1 hour' FROM generate_series(1, $1::int) i`,
      [flags.learners, stepAtEnd],
    );
    await client.query(
      `INSERT INTO "StepCompletion" ("id", "sessionId", "stepId", "completedAt")
       SELECT 'sc' || i || '-' || k, 'ls' || i, 's' || k, now() - make_interval(mins => 50 - k * 10)
         FROM generate_series(1, $1::int) i, generate_series(0, 4) k WHERE k < ($2::int[])[i]`,
      [flags.learners, stepAtEnd],
    );
    // Before: the old table (one row per check, index on (sessionId, createdAt)) with the hour's checks.
    await client.query(`CREATE TABLE "CheckRunBefore" (LIKE "CheckRun" INCLUDING DEFAULTS)`);
    await client.query(`CREATE INDEX ON "CheckRunBefore" ("sessionId", "createdAt")`);
    const tb = performance.now();
    for (let i = 0; i < flags.learners; i += 100) {
      const batch = hours.slice(i, i + 100);
      await client.query(
        `INSERT INTO "CheckRunBefore" ("id", "sessionId", "stepId", "machine", "trigger", "outcome", "exitCode", "output", "durationMs", "createdAt", "lastAt", "count")
         SELECT 'b' || x.n || '-' || x.j, 'ls' || x.n, x.step, 'node01', x.trig::"CheckTrigger", x.outc::"CheckOutcome", 1, x.out, 40,
                now() - make_interval(secs => 3600 - x.j * 2), now(), 1
           FROM unnest($1::int[], $2::int[], $3::text[], $4::text[], $5::text[], $6::text[]) AS x(n, j, step, trig, outc, out)`,
        batch.reduce<[number[], number[], string[], string[], string[], string[]]>(
          (acc, checks, b) => {
            checks.forEach((c, j) => {
              acc[0].push(i + b + 1);
              acc[1].push(j);
              acc[2].push(c.stepId);
              acc[3].push(c.trigger);
              acc[4].push(c.result.outcome);
              acc[5].push(c.result.output);
            });
            return acc;
          },
          [[], [], [], [], [], []],
        ),
      );
    }
    // After: the same hours as history rows, as the sample's recordCheckRun wrote them (copied per learner).
    await client.query(
      `INSERT INTO "CheckRun" ("id", "sessionId", "stepId", "machine", "trigger", "outcome", "exitCode", "output", "durationMs", "createdAt", "lastAt", "count", "minGapMs")
       SELECT 'a' || i || '-' || r."id", 'ls' || i, r."stepId", r."machine", r."trigger", r."outcome", r."exitCode", r."output", r."durationMs", r."createdAt", r."lastAt", r."count", r."minGapMs"
         FROM generate_series(1, $1::int) i JOIN "CheckRun" r ON r."sessionId" = ($2::text[])[1 + (i - 1) % $3::int]`,
      [flags.learners, sampleIds, sampleIds.length],
    );
    await client.query(`ANALYZE`);
    const count = async (table: string) =>
      Number((await client.query(`SELECT count(*) FROM "${table}" WHERE "sessionId" LIKE 'ls%'`)).rows[0].count);
    console.log(
      `\ndashboard grid, ${flags.learners} learners (seeded in ${((performance.now() - tb) / 1000).toFixed(1)} s): history rows before ${await count("CheckRunBefore")}, after ${await count("CheckRun")}`,
    );

    const beforeGrid = async () => {
      const sessions = await client.query(
        `SELECT s.*, (SELECT json_agg(json_build_object('s', c."stepId", 'at', c."completedAt")) FROM "StepCompletion" c WHERE c."sessionId" = s."id") AS completions
           FROM "LabSession" s WHERE s."learnerId" = ANY($1::text[]) AND s."labSlug" = 'bench' ORDER BY s."createdAt" DESC`,
        [
          (await client.query(`SELECT "userId" FROM "CohortMember" WHERE "cohortId" = $1 AND "role" = 'learner'`, [cohort.id])).rows.map(
            (r) => r.userId,
          ),
        ],
      );
      await Promise.all(
        sessions.rows.map((s) =>
          client.query(
            `SELECT "outcome", "output", "createdAt" FROM "CheckRunBefore" WHERE "sessionId" = $1 AND "stepId" = $2 AND "outcome" <> 'pass' ORDER BY "createdAt" DESC LIMIT 1`,
            [s.id, s.currentStepId],
          ),
        ),
      );
    };
    const beforeMs = await timed(flags.repeat, beforeGrid);
    const afterMs = await timed(flags.repeat, () => gridRows(db, cohort.id, "bench"));
    const rows = await gridRows(db, cohort.id, "bench");
    const withFailure = rows.filter((r) => r.failOutput).length;
    console.log(
      `  before: ${beforeMs.toFixed(1)} ms median (${flags.learners + 2} queries: members, sessions + completions, one newest-failure lookup per learner)`,
    );
    console.log(`  after:  ${afterMs.toFixed(1)} ms median (1 query; ${rows.length} rows, ${withFailure} with a failure shown)`);
    const plan = await db.$queryRaw<{ "QUERY PLAN": string }[]>(Prisma.sql`EXPLAIN (ANALYZE, BUFFERS) ${gridQuery(cohort.id, "bench")}`);
    console.log("  EXPLAIN ANALYZE of the grid query:");
    for (const line of plan) console.log(`    ${line["QUERY PLAN"]}`);

    // ---- 3. pushes --------------------------------------------------------------------------
    const noticesBefore = flags.learners / INTERVAL_S;
    const noticesAfter = afterPerHour / HOUR_S;
    const fetches = (n: number) => Math.min(n, 1000 / DEBOUNCE_MS);
    console.log(`\nper open dashboard, ${flags.learners} learners polled every ${INTERVAL_S} s:`);
    console.log(
      `  before: ${noticesBefore.toFixed(0)} change notices/s -> ${fetches(noticesBefore).toFixed(2)} grid fetches/s x ${beforeMs.toFixed(1)} ms = ${(fetches(noticesBefore) * beforeMs).toFixed(0)} ms of queries per second`,
    );
    console.log(
      `  after:  ${noticesAfter.toFixed(2)} change notices/s -> ${fetches(noticesAfter).toFixed(2)} grid fetches/s x ${afterMs.toFixed(1)} ms = ${(fetches(noticesAfter) * afterMs).toFixed(0)} ms of queries per second`,
    );
  } finally {
    await client.end();
    await stop();
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
