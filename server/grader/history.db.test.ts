/**
 * Check history as transitions and counts, on a real embedded PostgreSQL (rows only: the
 * results are what a check over SSH would have returned).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Db } from "../db/client";
import type { ScriptResult } from "../ssh/exec";
import { startTestDb } from "../testing/test-db";
import { pruneCheckRuns, recordCheckRun } from "./history";

let db: Db;
let stop: () => Promise<void>;

beforeAll(async () => {
  ({ db, stop } = await startTestDb());
}, 60_000);
afterAll(async () => stop?.());

const fail = (output: string, durationMs = 5): ScriptResult => ({ outcome: "fail", exitCode: 1, output, durationMs });
const pass: ScriptResult = { outcome: "pass", exitCode: 0, output: "", durationMs: 5 };

async function session(state: "ready" | "ended" = "ready") {
  return (await db.labSession.create({ data: { learnerId: `l-${Math.random()}`, labSlug: "x", provider: "static", state } })).id;
}
const rows = (sessionId: string) => db.checkRun.findMany({ where: { sessionId }, orderBy: { lastAt: "asc" } });
/** When the session's newest run was recorded, ms (the database's clock, as the gaps are). */
const newestAt = async (sessionId: string) => (await rows(sessionId)).at(-1)!.lastAt.getTime();
/**
 * A recorded gap against the one the test expects from the rows' own stamps: the database
 * rounds a stamp to the millisecond where the gap was computed from its microseconds.
 */
const ROUNDING_MS = 1;

describe("check history", () => {
  it("counts a repeated identical result in one row and starts a row when the result changes", async () => {
    const id = await session();
    const rec = (result: ScriptResult, stepId = "a", trigger: "poll" | "manual" = "poll") =>
      recordCheckRun(db, { sessionId: id, stepId, machine: "node01", trigger, result });
    expect(await rec(fail("missing"))).toBe(true);
    // Four repeats, each claiming its own duration: a run's gap is its start (recorded minus
    // duration) less the previous run's record.
    const at = [await newestAt(id)];
    const durations = [5, 3, 0, 1];
    for (const durationMs of durations) {
      expect(await rec(fail("missing", durationMs))).toBe(false);
      at.push(await newestAt(id));
    }
    expect(await rec(fail("wrong content"))).toBe(true); // another output: a transition
    expect(await rec(fail("wrong content"), "a", "manual")).toBe(true); // the learner asked: its own row
    expect(await rec(fail("wrong content"), "a", "manual")).toBe(true); // and again: every Check is a row (a recording marker)
    expect(await rec(fail("wrong content"))).toBe(true);
    expect(await rec(pass)).toBe(true);
    expect(await rec(fail("missing"), "b")).toBe(true); // next step
    const all = await rows(id);
    expect(all.map((r) => [r.stepId, r.trigger, r.outcome, r.output, r.count])).toEqual([
      ["a", "poll", "fail", "missing", 5],
      ["a", "poll", "fail", "wrong content", 1],
      ["a", "manual", "fail", "wrong content", 1],
      ["a", "manual", "fail", "wrong content", 1],
      ["a", "poll", "fail", "wrong content", 1],
      ["a", "poll", "pass", "", 1],
      ["b", "poll", "fail", "missing", 1],
    ]);
    const first = all[0]!;
    // The streak began with the first run and was last seen at the fifth.
    expect(first.createdAt.getTime()).toBe(at[0]);
    expect(first.lastAt.getTime()).toBe(at[4]);
    // The smallest gap between one run's end and the next one's start.
    const gaps = durations.map((durationMs, i) => at[i + 1]! - durationMs - at[i]!);
    expect(Math.abs(first.minGapMs! - Math.min(...gaps))).toBeLessThanOrEqual(ROUNDING_MS);
    expect(all[1]!.minGapMs).not.toBeNull();
  });

  it("shows two overlapping runs as a negative gap (the proof that no check ran twice can fail)", async () => {
    const id = await session();
    await recordCheckRun(db, { sessionId: id, stepId: "a", machine: "node01", trigger: "poll", result: fail("x") });
    const previous = await newestAt(id);
    // A run that claims to have lasted a minute ended just now: it started before the previous one ended.
    await recordCheckRun(db, { sessionId: id, stepId: "a", machine: "node01", trigger: "poll", result: fail("x", 60_000) });
    const [row] = await rows(id);
    expect(row!.count).toBe(2);
    expect(Math.abs(row!.minGapMs! - (row!.lastAt.getTime() - 60_000 - previous))).toBeLessThanOrEqual(ROUNDING_MS);
    expect(row!.minGapMs).toBeLessThan(0);
  });

  it("keeps the outputs apart per session", async () => {
    const [a, b] = [await session(), await session()];
    await recordCheckRun(db, { sessionId: a, stepId: "s", machine: "m", trigger: "poll", result: fail("same") });
    expect(await recordCheckRun(db, { sessionId: b, stepId: "s", machine: "m", trigger: "poll", result: fail("same") })).toBe(true);
    expect((await rows(a)).map((r) => r.count)).toEqual([1]);
  });

  it("prunes rows past the retention, but keeps a live session's newest row of each step", async () => {
    const live = await session("ready");
    const over = await session("ended");
    const old = new Date(Date.now() - 40 * 86_400_000);
    const older = new Date(Date.now() - 41 * 86_400_000);
    const recent = new Date(Date.now() - 86_400_000);
    const make = (sessionId: string, stepId: string, at: Date, output: string) =>
      db.checkRun.create({
        data: { sessionId, stepId, machine: "m", trigger: "poll", outcome: "fail", output, durationMs: 1, createdAt: at, lastAt: at },
      });
    await make(live, "a", older, "live a older"); // pruned: a newer row of step a exists
    await make(live, "a", old, "live a newest"); // kept: step a's newest
    await make(live, "b", recent, "live b recent"); // kept: within retention
    await make(over, "a", old, "ended a newest"); // pruned: the session is over
    await make(over, "b", recent, "ended b recent"); // kept: within retention
    expect(await pruneCheckRuns(db, 30)).toBe(2);
    const left = await db.checkRun.findMany({ where: { sessionId: { in: [live, over] } }, select: { output: true } });
    expect(left.map((r) => r.output).sort()).toEqual(["ended b recent", "live a newest", "live b recent"]);
    expect(await pruneCheckRuns(db, 30)).toBe(0);
  });
});
