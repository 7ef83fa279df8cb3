/**
 * A command typed in the learner's terminal unlocks the step about half a second later, long
 * before the next poll: the gateway nudges the grader on Enter. Real sshd hosts, the real demo
 * lab (labs/hello-terminal), the real gateway over WebSocket.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import type { Progress } from "./progress";
import { startTestStack, type TestStack } from "../testing/stack";
import { TerminalTestClient } from "../testing/terminal-client";

/** Poll interval far longer than the test, so only the nudge can pass the step in time. */
const SLOW_POLL_MS = 120_000;
let stack: TestStack;

beforeAll(async () => {
  stack = await startTestStack({ subnet: 47, grader: { intervalMs: SLOW_POLL_MS } });
}, 120_000);

afterAll(async () => {
  await stack?.stop();
});

it("unlocks the step within a couple of seconds of the command that finishes it", async () => {
  const sessionId = await stack.startSession("nudged-learner", "hello-terminal");
  stack.grader.start();
  const client = await TerminalTestClient.connect(stack.wsUrl, { token: stack.token(sessionId, "node01") });
  await client.waitFor((c) => c.messages.some((m) => m.type === "status" && m.state === "connected"), 20_000);
  await new Promise((r) => setTimeout(r, 1_000)); // the grader has picked up the session by now

  const passed = new Promise<Progress>((resolve) => {
    const off = stack.bus.onProgress(sessionId, (p) => {
      if (p.steps[0]?.state !== "done") return;
      off();
      resolve(p);
    });
  });
  const typed = Date.now();
  client.input("echo こんにちは > /root/hello.txt\r");
  const progress = await Promise.race([passed, new Promise<null>((r) => setTimeout(() => r(null), 5_000))]);
  expect(progress, "step did not pass within 5 s of the command").not.toBeNull();
  expect(Date.now() - typed).toBeLessThan(3_000);
  expect(progress!.currentStepId).toBe("node02-hostname");
  await client.close();
});
