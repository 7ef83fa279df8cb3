/**
 * A command typed in the learner's terminal unlocks the step before its next poll is due: the
 * gateway nudges the grader on Enter. Real sshd hosts, the real demo lab (labs/hello-terminal),
 * the real gateway over WebSocket. How soon after the Enter is bench/grader.ts's to measure
 * (nudged beside polled unlocks).
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { Grader } from "./grader";
import type { Progress } from "./progress";
import { log } from "../log";
import { startTestStack, type TestStack } from "../testing/stack";
import { TerminalTestClient } from "../testing/terminal-client";

/** Poll interval far longer than the test, so only the nudge can pass the step before the next poll. */
const SLOW_POLL_MS = 120_000;
let stack: TestStack;

beforeAll(async () => {
  stack = await startTestStack({ subnet: 47, grader: { intervalMs: SLOW_POLL_MS } });
}, 120_000);

afterAll(async () => {
  await stack?.stop();
});

it("unlocks the step on the command that finishes it, before the session's next poll is due", async () => {
  const sessionId = await stack.startSession("nudged-learner", "hello-terminal");
  stack.grader.start();
  const client = await TerminalTestClient.connect(stack.wsUrl, { token: stack.token(sessionId, "node01") });
  await client.waitFor((c) => c.messages.some((m) => m.type === "status" && m.state === "connected"), 20_000);
  // The grader's first poll of the session is over (its run recorded, its claim released): the
  // next one is due SLOW_POLL_MS later.
  const row = () => stack.db.labSession.findUniqueOrThrow({ where: { id: sessionId } });
  const polled = async () => (await stack.db.checkRun.count({ where: { sessionId } })) > 0 && (await row()).checkUntil === null;
  await expect.poll(polled, { timeout: 30_000 }).toBe(true);
  const nextPoll = (await row()).gradeDueAt!;

  const passed = new Promise<Progress>((resolve) => {
    const off = stack.bus.onProgress(sessionId, (p) => {
      if (p.steps[0]?.state !== "done") return;
      off();
      resolve(p);
    });
  });
  client.input("echo こんにちは > /root/hello.txt\r");
  const progress = await passed;
  expect(progress.currentStepId).toBe("node02-hostname");
  // Passed by the nudge: the step was done before any poll of the session was due.
  const completion = await stack.db.stepCompletion.findFirstOrThrow({ where: { sessionId, stepId: progress.steps[0]!.id } });
  expect(completion.completedAt.getTime()).toBeLessThan(nextPoll.getTime());
  await client.close();
});

it("stretches the polls of a step that keeps failing while nobody types, and checks at once on the next Enter", async () => {
  // A grader of its own: short intervals, no jitter; the stack's (its polls 120 s apart) stopped.
  await stack.grader.drain(10_000);
  const sessionId = await stack.startSession("quiet-learner", "hello-terminal");
  const grader = new Grader(
    { db: stack.db, labs: stack.labs, pool: stack.pool, bus: stack.bus, log },
    { intervalMs: 300, jitter: 0, quietMaxMs: 2_400 },
  );
  const runs = async () => (await stack.db.checkRun.aggregate({ where: { sessionId }, _sum: { count: true } }))._sum.count ?? 0;
  /** Times (ms) at which the session's run count grew, until it reached `total`. */
  const runTimes = async (total: number): Promise<number[]> => {
    const times: number[] = [];
    for (let seen = await runs(); seen < total;) {
      await new Promise((r) => setTimeout(r, 25));
      const now = await runs();
      if (now > seen) times.push(Date.now());
      seen = now;
    }
    return times;
  };
  grader.start();
  try {
    const quiet = await runTimes(7);
    const gaps = quiet.slice(1).map((t, i) => t - quiet[i]!);
    console.log(`quiet polls: gaps between failed runs ${gaps.join(", ")} ms (interval 300, cap 2400)`);
    // Doubling per failed poll: the later gaps are several intervals, the first is one.
    expect(gaps.at(-1)!).toBeGreaterThan(2 * gaps[0]!);
    expect(gaps.at(-1)!).toBeGreaterThan(1_200);

    // The learner's Enter: the check runs before the stretched poll was due, and polls start again from the interval.
    const due = (await stack.db.labSession.findUniqueOrThrow({ where: { id: sessionId } })).gradeDueAt!;
    const before = await runs();
    grader.nudge(sessionId);
    const after = await runTimes(before + 2);
    expect(after[0]!).toBeLessThan(due.getTime());
    expect(after[1]! - after[0]!).toBeLessThan(gaps.at(-1)!);
  } finally {
    await grader.drain(10_000);
  }
}, 120_000);
