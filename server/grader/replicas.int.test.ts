/**
 * Two graders over one real PostgreSQL and real sshd hosts, as two server processes would run
 * them: every due check runs on exactly one of them (no two runs of a session overlap or come
 * closer than the interval allows), both share the work, the Check button on either waits for a
 * running check instead of doubling it, and when one stops the other carries every session.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { log } from "../log";
import { SshExecPool } from "../ssh/exec";
import { startTestStack, type TestStack } from "../testing/stack";
import { Grader } from "./grader";

const INTERVAL_MS = 400;
const JITTER = 0.2;
let stack: TestStack;
let labsDir: string;
let second: Grader;
const secondPool = new SshExecPool();

function writeLab(dir: string) {
  const put = (file: string, content: string, mode = 0o644) => {
    const full = path.join(dir, "never-passes", file);
    fs.mkdirSync(path.dirname(full), { recursive: true });
    fs.writeFileSync(full, content, { mode });
  };
  put(
    "lab.yaml",
    [
      "title: replicas",
      "summary: a step that never passes",
      "durationMinutes: 5",
      "steps:",
      "  - { id: never, title: never, machine: node01, timeoutSeconds: 5 }",
    ].join("\n"),
  );
  put("lesson.md", "# test\n");
  put("steps/never/step.md", "never\n");
  put("steps/never/hint.md", "never\n");
  // Takes a moment, so that overlapping runs would show.
  put("steps/never/check.sh", "#!/bin/bash\nsleep 0.15\necho not yet\nexit 1\n", 0o755);
  put("steps/never/solution.sh", "#!/bin/bash\ntrue\n", 0o755);
}

beforeAll(async () => {
  labsDir = fs.mkdtempSync(path.join(os.tmpdir(), "labdeck-replica-labs-"));
  writeLab(labsDir);
  stack = await startTestStack({ subnet: 45, labsDir, grader: { intervalMs: INTERVAL_MS, jitter: JITTER } });
  second = new Grader(
    { db: stack.db, labs: stack.labs, pool: secondPool, bus: stack.bus, log },
    { intervalMs: INTERVAL_MS, jitter: JITTER },
  );
}, 120_000);

afterAll(async () => {
  second?.stop();
  secondPool.closeAll();
  await stack?.stop();
  fs.rmSync(labsDir, { recursive: true, force: true });
});

/** A session's history rows: a streak of identical results per row, with its run count and smallest gap. */
async function rowsOf(sessionId: string) {
  return stack.db.checkRun.findMany({
    where: { sessionId },
    orderBy: { lastAt: "asc" },
    select: { count: true, minGapMs: true, trigger: true },
  });
}
const runCount = (rows: { count: number }[]) => rows.reduce((n, r) => n + r.count, 0);
/** Smallest time between one run's end and the next run's start over the session's history, ms. */
const smallestGap = (rows: { minGapMs: number | null }[]) => Math.min(...rows.map((r) => r.minGapMs ?? Infinity));

describe("two graders over one database", () => {
  it("each due check runs once: runs of a session never overlap and keep the interval; both processes work", async () => {
    const sessions = await Promise.all([1, 2, 3, 4].map((i) => stack.startSession(`replica-${i}`, "never-passes")));
    const byFirst = new Set<string>();
    const seenBy = (grader: Grader, tag: string) => {
      const original = (grader as unknown as { runClaimed: (...a: unknown[]) => Promise<unknown> }).runClaimed.bind(grader);
      (grader as unknown as { runClaimed: (...a: unknown[]) => Promise<unknown> }).runClaimed = (...a: unknown[]) => {
        byFirst.add(tag);
        return original(...a);
      };
    };
    seenBy(stack.grader, "A");
    seenBy(second, "B");
    stack.grader.start();
    second.start();
    // Enough runs of every session, by both processes, for the history to show any overlap.
    const RUNS = 8;
    const counts = () => Promise.all(sessions.map(async (id) => runCount(await rowsOf(id))));
    const enough = async () => byFirst.size === 2 && (await counts()).every((n) => n >= RUNS);
    await expect.poll(enough, { timeout: 40_000, interval: 200 }).toBe(true);
    for (const id of sessions) {
      const rows = await rowsOf(id);
      // The same failure every time: one row counting every run.
      expect(rows).toHaveLength(1);
      // Every run starts after the previous one was recorded, at least ~the interval later (the
      // claim makes the next due time; a second process running it too would start sooner, or
      // while it still ran: a gap below it or negative). This also bounds the runs: none doubled.
      expect(smallestGap(rows)).toBeGreaterThan(INTERVAL_MS * (1 - JITTER) * 0.75);
    }
    expect([...byFirst].sort()).toEqual(["A", "B"]);
  }, 60_000);

  it("the Check button on one process waits for a check running on the other, then runs once", async () => {
    const id = await stack.startSession("replica-manual", "never-passes");
    // Both processes poll the session: a Check now may meet a poll running on either.
    await expect.poll(async () => runCount(await rowsOf(id)), { timeout: 30_000 }).toBeGreaterThanOrEqual(2);
    const [a, b] = await Promise.all([stack.grader.checkNow(id), second.checkNow(id)]);
    expect(a.lastCheck?.trigger).toBe("manual");
    expect(b.lastCheck?.trigger).toBe("manual");
    const rows = await rowsOf(id);
    expect(runCount(rows.filter((r) => r.trigger === "manual"))).toBe(2);
    // No two runs overlapped (5 ms of clock slack).
    expect(smallestGap(rows)).toBeGreaterThanOrEqual(-5);
  }, 60_000);

  it("when one process stops, the other carries every session", async () => {
    const id = await stack.startSession("replica-alone", "never-passes");
    stack.grader.stop();
    const before = runCount(await rowsOf(id));
    // Runs go on (one of them may have been the stopped process's last).
    await expect.poll(async () => runCount(await rowsOf(id)) - before, { timeout: 30_000 }).toBeGreaterThan(2);
  }, 60_000);
});
