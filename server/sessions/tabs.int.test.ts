/**
 * Several shells per machine (server/sessions/tabs.ts) on real sshd hosts with their terminal
 * holders, the real gateway over WebSockets and PostgreSQL: an extra tab is its own shell beside
 * the first, durable like it (a lost socket, a process that forgot every terminal), bounded,
 * recorded under its own name, visible to a watcher, and closing it ends its shell everywhere —
 * also on a process that only hears of it through the event bus.
 * Run: flock /tmp/labdeck-test.lock npx vitest run server/terminal/tabs.test.ts
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { machineEndpoint } from "./lab-sessions";
import { startTestStack, type TestStack } from "../testing/stack";
import { TerminalTestClient } from "../testing/terminal-client";
import { CloseCode } from "../terminal/protocol";
import { MAX_SHELLS_PER_MACHINE } from "../terminal/tab-names";
import { closeTab, openTab, openTabs, terminalEndpoint } from "./tabs";
import { signTerminalToken } from "../terminal/token";

let stack: TestStack;
let sessionId: string;
const LEARNER = "tabs-learner";

function tabToken(machine: string, number: number, mode: "write" | "read" = "write"): string {
  return signTerminalToken(stack.secret, { sid: sessionId, m: machine, ...(number > 1 ? { n: number } : {}), mode, sub: LEARNER });
}

async function connected(token: string, offset = 0): Promise<TerminalTestClient> {
  const client = await TerminalTestClient.connect(stack.wsUrl, { token, offset, writer: `w${Math.random().toString(36).slice(2, 10)}` });
  await client.waitFor((c) => c.messages.some((m) => m.type === "status" && m.state === "connected"), 20_000, "connected");
  return client;
}

beforeAll(async () => {
  stack = await startTestStack({ subnet: 113 });
  sessionId = await stack.startSession(LEARNER);
}, 120_000);

afterAll(async () => {
  await stack?.stop();
});

describe("extra shells", () => {
  it("a second shell on node01 works beside the first: its own shell, its own recording", async () => {
    const tab = await openTab(stack.db, sessionId, "node01");
    expect(tab).toEqual({ machine: "node01", number: 2 });
    const main = await connected(tabToken("node01", 1));
    const second = await connected(tabToken("node01", 2));
    second.input("TABVAR=second; echo tab-$((1+1))-$TABVAR\r");
    await second.waitForText("tab-2-second");
    main.input("echo main-[$TABVAR]-$((40+2))\r");
    await main.waitForText("main-[]-42");
    expect(main.text()).not.toContain("tab-2-second");
    await stack.recorder.flushAll();
    const names = (await stack.db.terminalRecording.findMany({ where: { sessionId }, select: { machine: true } }))
      .map((r) => r.machine)
      .sort();
    expect(names).toEqual(["node01", "node01#2"]);
    await main.close();
    await second.close();
  });

  it("is durable: a new socket, and a process that forgot every terminal, find the same shell", async () => {
    const first = await connected(tabToken("node01", 2));
    first.input("echo still-$TABVAR\r");
    await first.waitForText("still-second");
    await first.close();
    // As after a server restart: this process holds no terminal; the shell lives in the holder.
    await stack.terminals.closeAll();
    const again = await connected(tabToken("node01", 2));
    again.input("echo again-$TABVAR\r");
    await again.waitForText("again-second");
    await again.close();
  });

  it("a watcher's read token sees the tab's output and cannot type", async () => {
    const owner = await connected(tabToken("node01", 2));
    const watcher = await connected(tabToken("node01", 2, "read"));
    owner.input("echo watched-$((6*7))\r");
    await watcher.waitForText("watched-42");
    watcher.input("echo never-$((1+1))\r");
    // A pong to a later message shows the gateway has handled the input (messages of a socket are
    // handled in order); then the owner's command: had the input been typed, the shell would have
    // run it first.
    watcher.send({ type: "ping", t: 7 });
    await watcher.waitFor((c) => c.messages.some((m) => m.type === "pong" && m.t === 7), 10_000, "pong");
    owner.input("echo after-$((2+3))\r");
    await owner.waitForText("after-5");
    expect(owner.text()).not.toContain("never-2");
    await owner.close();
    await watcher.close();
  });

  it(`is bounded: ${MAX_SHELLS_PER_MACHINE} shells per machine, numbers never reused, other machines unaffected`, async () => {
    await openTab(stack.db, sessionId, "node01");
    await openTab(stack.db, sessionId, "node01");
    await expect(openTab(stack.db, sessionId, "node01")).rejects.toMatchObject({ status: 409, code: "tooManyShells" });
    // Concurrent opens on another machine never pass the bound either.
    const results = await Promise.allSettled(Array.from({ length: 6 }, () => openTab(stack.db, sessionId, "node02")));
    expect(results.filter((r) => r.status === "fulfilled")).toHaveLength(MAX_SHELLS_PER_MACHINE - 1);
    expect((await openTabs(stack.db, sessionId)).map((t) => `${t.machine}#${t.number}`)).toEqual([
      "node01#2",
      "node01#3",
      "node01#4",
      "node02#2",
      "node02#3",
      "node02#4",
    ]);
    expect(await closeTab(stack.db, sessionId, "node01", 3)).toBe(true);
    expect(await closeTab(stack.db, sessionId, "node01", 3)).toBe(false);
    expect(await openTab(stack.db, sessionId, "node01")).toEqual({ machine: "node01", number: 5 });
    await expect(openTab(stack.db, sessionId, "node09")).rejects.toMatchObject({ status: 404 });
    // A closed tab has no terminal: its token's hello is 4404.
    expect(await terminalEndpoint(stack.db, sessionId, "node01", 3)).toBeNull();
    const stale = await TerminalTestClient.connect(stack.wsUrl, { token: tabToken("node01", 3) });
    expect((await stale.waitForClose()).code).toBe(CloseCode.notFound);
  });

  it("closing a tab ends its shell: sockets close with tabClosed, a new tab is a fresh shell", async () => {
    const client = await connected(tabToken("node01", 2));
    client.input("sleep 1000 & echo bg-pid-$!\r");
    await client.waitForText(/bg-pid-\d+/);
    const pid = /bg-pid-(\d+)/.exec(client.text())![1]!;
    expect(await closeTab(stack.db, sessionId, "node01", 2)).toBe(true);
    await stack.terminals.closeTab(sessionId, "node01", 2, await machineEndpoint(stack.db, sessionId, "node01"));
    expect(await client.waitForClose()).toEqual({ code: CloseCode.sessionOver, reason: "tabClosed" });
    // The shell's job got the hang-up with it.
    const endpoint = (await machineEndpoint(stack.db, sessionId, "node01"))!;
    await expect
      .poll(async () => (await stack.pool.run(endpoint, `kill -0 ${pid} 2>/dev/null && echo alive || echo gone`, 10)).output.trim(), {
        timeout: 10_000,
      })
      .toBe("gone");
  });

  it("a tab closed by another process: the bus notice ends this process's terminal of it", async () => {
    const client = await connected(tabToken("node02", 2));
    client.input("echo before-close-$((2+2))\r");
    await client.waitForText("before-close-4");
    // What another process's DELETE does: the row, then the notice (its own terminals it closes itself).
    expect(await closeTab(stack.db, sessionId, "node02", 2)).toBe(true);
    await stack.bus.publishTabs(sessionId);
    expect(await client.waitForClose()).toEqual({ code: CloseCode.sessionOver, reason: "tabClosed" });
  });

  it("a closed tab that no process had open still has its shell hung up", async () => {
    const endpoint = (await machineEndpoint(stack.db, sessionId, "node02"))!;
    const client = await connected(tabToken("node02", 3));
    client.input("sleep 1001 & echo bg3-pid-$!\r");
    await client.waitForText(/bg3-pid-\d+/);
    const pid = /bg3-pid-(\d+)/.exec(client.text())![1]!;
    await client.close();
    await stack.terminals.closeAll(); // nobody here has it open any more
    expect(await closeTab(stack.db, sessionId, "node02", 3)).toBe(true);
    await stack.terminals.closeTab(sessionId, "node02", 3, endpoint);
    await expect
      .poll(async () => (await stack.pool.run(endpoint, `kill -0 ${pid} 2>/dev/null && echo alive || echo gone`, 10)).output.trim(), {
        timeout: 10_000,
      })
      .toBe("gone");
  });
});
