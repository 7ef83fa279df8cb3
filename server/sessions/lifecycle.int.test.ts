/**
 * Session lifecycle on real sshd hosts (network namespaces), a real database and the real gateway:
 * a session whose time is up is ended by a sweep (its terminals close with 4410 and the reason,
 * its machines go back to the provider, its progress stays), and terminal input counts as activity.
 * Suspension (machines powered off) needs a provider that can power off: warm-pool.vm.test.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CloseCode } from "../terminal/protocol";
import { startTestStack, type TestStack } from "../testing/stack";
import { TerminalTestClient } from "../testing/terminal-client";
import type { MachineProvider } from "../machines/provider";
import { machineEndpoint, sweepSessions } from "./lab-sessions";

let stack: TestStack;

beforeAll(async () => {
  stack = await startTestStack({ subnet: 53, idleMs: 60_000 });
}, 120_000);

afterAll(async () => {
  await stack?.stop();
}, 60_000);

const connected = (c: TerminalTestClient) => c.messages.some((m) => m.type === "status" && m.state === "connected");

describe("session lifecycle", () => {
  it("terminal input counts as activity; a sweep leaves an active session alone", async () => {
    const sessionId = await stack.startSession("learner-active");
    const before = (await stack.db.labSession.findUniqueOrThrow({ where: { id: sessionId } })).lastActivityAt;
    const client = await TerminalTestClient.connect(stack.wsUrl, { token: stack.token(sessionId, "node01") });
    await client.waitFor(connected, 20_000, "connected");
    await client.waitForText(/[#$] $/); // the shell's prompt: it reads input now
    client.input("echo hi\r");
    await client.waitForText("hi\r\n");
    await expect
      .poll(async () => (await stack.db.labSession.findUniqueOrThrow({ where: { id: sessionId } })).lastActivityAt.getTime(), {
        timeout: 5_000,
      })
      .toBeGreaterThan(before.getTime());

    const report = await stack.sweeper.sweep(new Date(Date.now() + 30_000));
    expect(report).toEqual({ expired: [], suspended: [] });
    expect((await stack.db.labSession.findUniqueOrThrow({ where: { id: sessionId } })).state).toBe("ready");
    // The static-hosts provider cannot power machines off: idleness never suspends its sessions.
    expect((await stack.sweeper.sweep(new Date(Date.now() + 10 * 60_000))).suspended).toEqual([]);
    await client.close();
    await stack.db.labSession.update({ where: { id: sessionId }, data: { state: "ended", endedAt: new Date() } });
  }, 60_000);

  it("ends a session whose time is up: terminals close with 4410 and why, machines are released, progress stays", async () => {
    const sessionId = await stack.startSession("learner-late");
    const session = await stack.db.labSession.findUniqueOrThrow({ where: { id: sessionId } });
    // The stack's 60-minute limit, counted from ready.
    expect(session.expiresAt!.getTime() - session.readyAt!.getTime()).toBe(60 * 60_000);
    await stack.db.stepCompletion.create({ data: { sessionId, stepId: "first" } });

    const client = await TerminalTestClient.connect(stack.wsUrl, { token: stack.token(sessionId, "controlplane") });
    await client.waitFor(connected, 20_000, "connected");

    // Not yet: one minute before the limit nothing happens.
    expect((await stack.sweeper.sweep(new Date(session.expiresAt!.getTime() - 60_000))).expired).toEqual([]);
    const report = await stack.sweeper.sweep(new Date(session.expiresAt!.getTime() + 1_000));
    expect(report.expired).toEqual([sessionId]);

    const closed = await client.waitForClose(10_000);
    expect(closed.code).toBe(CloseCode.sessionOver);
    expect(closed.reason).toBe("expired");
    const ended = await stack.db.labSession.findUniqueOrThrow({ where: { id: sessionId }, include: { completions: true } });
    expect(ended).toMatchObject({ state: "ended", endReason: "expired" });
    expect(ended.completions.map((c) => c.stepId)).toEqual(["first"]);
    expect(await machineEndpoint(stack.db, sessionId, "controlplane")).toBeNull();

    // A new socket for the ended session is refused; the machines serve the next learner.
    const late = await TerminalTestClient.connect(stack.wsUrl, { token: stack.token(sessionId, "controlplane") });
    expect((await late.waitForClose(10_000)).code).toBe(CloseCode.notFound);
    const next = await stack.startSession("learner-next");
    expect(next).not.toBe(sessionId);
  }, 60_000);

  it("suspends each session by its own idle time (its cohort's) or else the platform's (a recording provider stands in for power-off)", async () => {
    const suspended: string[] = [];
    const recording: MachineProvider = {
      name: "recording",
      create: () => Promise.reject(new Error("not used")),
      destroy: async () => {},
      suspend: async (sessionId) => void suspended.push(sessionId),
    };
    const twoMinutesAgo = new Date(Date.now() - 2 * 60_000);
    const make = (learnerId: string, idleMinutes: number | null) =>
      stack.db.labSession.create({
        data: { learnerId, labSlug: "idle-lab", provider: "recording", state: "ready", lastActivityAt: twoMinutesAgo, idleMinutes },
      });
    const cohort5 = await make("idle-cohort-5", 5);
    const platform = await make("idle-platform", null);
    const never = await make("idle-never", 0);

    // Only these three count (the earlier tests' sessions may be swept too).
    const ours = (ids: string[]) => ids.filter((id) => [cohort5.id, platform.id, never.id].includes(id));
    const first = await sweepSessions(stack.db, recording, { idleMs: 60_000 });
    expect(ours(first.suspended)).toEqual([platform.id]);
    const later = await sweepSessions(stack.db, recording, { idleMs: 60_000, now: new Date(Date.now() + 10 * 60_000) });
    expect(ours(later.suspended)).toEqual([cohort5.id]);
    expect(ours(suspended)).toEqual([platform.id, cohort5.id]);
    expect((await stack.db.labSession.findUniqueOrThrow({ where: { id: never.id } })).state).toBe("ready");
    await stack.db.labSession.updateMany({ where: { labSlug: "idle-lab" }, data: { state: "ended" } });
  }, 30_000);
});
