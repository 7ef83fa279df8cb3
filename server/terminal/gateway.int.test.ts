/**
 * The terminal path against real sshd hosts (network namespaces), a real PostgreSQL and the real
 * gateway over real WebSockets.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestStack, type TestStack } from "../testing/stack";
import { TerminalTestClient } from "../testing/terminal-client";
import { CloseCode, MAX_CLIENT_FRAME_BYTES } from "./protocol";
import { REPLAY_BUFFER_BYTES } from "./terminal";

let stack: TestStack;
let sessionId: string;

beforeAll(async () => {
  stack = await startTestStack({ subnet: 41 });
  sessionId = await stack.startSession("learner-a");
}, 120_000);

afterAll(async () => {
  await stack?.stop();
});

/** Connects as the session's learner to a machine and waits until the shell is live. */
async function open(machine: string, extra: { offset?: number; cols?: number; rows?: number } = {}) {
  const client = await TerminalTestClient.connect(stack.wsUrl, { token: stack.token(sessionId, machine), ...extra });
  await client.waitFor((c) => c.messages.some((m) => m.type === "status" && m.state === "connected"), 20_000, "connected");
  return client;
}

describe("terminal gateway over real sshd", () => {
  it("echoes a command round trip on the right machine, Japanese included", async () => {
    const client = await open("node01");
    client.input("hostname; echo こんにちは-$((40+2))\r");
    await client.waitForText("こんにちは-42");
    expect(client.text()).toMatch(/[\r\n]node01\r\n/);
    expect(client.gaps).toEqual([]);
    await client.close();
  });

  it("a fresh session's three machines each start their terminal at offset 0: epochs are per machine (the holder terminal id is the same on all three)", async () => {
    // Keyed by the holder terminal id alone, the machines shared one epoch list: each took the
    // others' logs for its own earlier ones (end unknown) and started 2^40 further, so a page
    // opening at offset 0 got a snapshot, and on VMs (a boot id each) a reboot line.
    const session = await stack.startSession("learner-epochs");
    for (const machine of ["controlplane", "node01", "node02"]) {
      const client = await TerminalTestClient.connect(stack.wsUrl, { token: stack.token(session, machine) });
      client.input(`echo fresh-${machine}-$((6*7))\r`);
      await client.waitForText(`fresh-${machine}-42`, 20_000);
      expect(client.messages.filter((m) => m.type === "snapshot" || m.type === "reset")).toEqual([]);
      expect(client.offset).toBeLessThan(1024 * 1024);
      expect(client.text()).not.toContain("再起動");
      await client.close();
    }
    const rows = await stack.db.terminalEpoch.findMany({ where: { sessionId: session }, orderBy: { terminal: "asc" } });
    expect(rows.map((r) => [r.terminal, Number(r.base)])).toEqual([
      ["controlplane", 0],
      ["node01", 0],
      ["node02", 0],
    ]);
  });

  it("keeps input typed before the shell is ready", async () => {
    const session = await stack.startSession("learner-early");
    const client = await TerminalTestClient.connect(stack.wsUrl, { token: stack.token(session, "node02") });
    client.input("echo early-$((6*7))\r"); // sent right after hello, before the SSH shell exists
    await client.waitForText("early-42", 20_000);
    await client.close();
  });

  it("resumes after a disconnect mid-output with no byte lost or duplicated", async () => {
    const first = await open("controlplane");
    const lines = 30_000; // ~200 KB through the PTY: fits the replay buffer
    expect(lines * 7).toBeLessThan(REPLAY_BUFFER_BYTES);
    first.input(`echo START-OF-SEQ; seq 1 ${lines}; echo END-OF-$((6*7))\r`);
    await first.waitFor((c) => c.text().includes("\n100\r"), 20_000, "output to start");
    first.ws.terminate(); // abrupt, mid-output
    const haveUpTo = first.offset;
    const before = first.bytes();

    const second = await TerminalTestClient.connect(stack.wsUrl, { token: stack.token(sessionId, "controlplane"), offset: haveUpTo });
    await second.waitForText("END-OF-42\r\n", 30_000);
    expect(second.messages.find((m) => m.type === "reset")).toBeUndefined();
    expect(second.gaps).toEqual([]);
    const all = Buffer.concat([before, second.bytes()]).toString("utf8");
    const body = all.slice(all.lastIndexOf("START-OF-SEQ\r\n"), all.lastIndexOf("END-OF-42\r\n"));
    const numbers = body
      .split("\r\n")
      .filter((l) => /^\d+$/.test(l))
      .map(Number);
    expect(numbers.length).toBe(lines);
    expect(numbers.every((n, i) => n === i + 1)).toBe(true);
    await second.close();
  });

  it("sends a snapshot of the current screen when the client's offset has left the replay buffer", async () => {
    const session = await stack.startSession("learner-reset");
    const writer = await TerminalTestClient.connect(stack.wsUrl, { token: stack.token(session, "node01") });
    await writer.waitFor((c) => c.messages.some((m) => m.type === "status" && m.state === "connected"), 20_000);
    writer.input(`head -c ${REPLAY_BUFFER_BYTES * 2} /dev/zero | tr '\\0' x; echo; echo BIG-$((1+1))-DONE\r`);
    await writer.waitForText("BIG-2-DONE\r\n", 30_000);
    const late = await TerminalTestClient.connect(stack.wsUrl, { token: stack.token(session, "node01"), offset: 0 });
    await late.waitFor((c) => c.messages.some((m) => m.type === "snapshot"), 10_000, "snapshot");
    const snapshot = late.messages.find((m) => m.type === "snapshot") as { offset: number; data: string };
    expect(snapshot.offset).toBeGreaterThan(REPLAY_BUFFER_BYTES);
    expect(snapshot.data).toContain("BIG-2-DONE"); // the screen as it is, not a blank one
    expect(late.messages.some((m) => m.type === "reset")).toBe(false);
    expect(late.gaps).toEqual([]);
    await Promise.all([writer.close(), late.close()]);
  });

  it("pauses the shell instead of buffering without bound when the only viewer stops reading", async () => {
    const session = await stack.startSession("learner-slow");
    const client = await TerminalTestClient.connect(stack.wsUrl, { token: stack.token(session, "node01") });
    await client.waitFor((c) => c.messages.some((m) => m.type === "status" && m.state === "connected"), 20_000);
    const terminal = (await stack.terminals.get(session, "node01"))!;
    client.input("yes labdeck-backpressure-line\r");
    await client.waitFor((c) => c.offset > 1024 * 1024, 20_000, "1 MiB of output");
    const socket = (client.ws as unknown as { _socket: import("node:net").Socket })._socket;
    socket.pause(); // a browser that stops reading
    await new Promise((r) => setTimeout(r, 3000)); // let every buffer on the way fill up
    const stalledAt = terminal.endOffset;
    const rss = process.memoryUsage().rss;
    await new Promise((r) => setTimeout(r, 3000));
    // The SSH channel is paused: the remote `yes` is blocked, so output no longer grows.
    expect(terminal.endOffset - stalledAt).toBeLessThan(256 * 1024);
    expect(process.memoryUsage().rss - rss).toBeLessThan(64 * 1024 * 1024);
    socket.resume();
    client.input("\x03");
    client.input("echo RESUMED-$((4*4))\r");
    // What `yes` printed until the Ctrl-C reached it drains first: generous under a loaded host.
    await client.waitForText("RESUMED-16\r\n", 90_000);
    expect(client.gaps).toEqual([]);
    expect(client.messages.find((m) => m.type === "reset")).toBeUndefined();
    await client.close();
  });

  it("delivers resizes to the PTY", async () => {
    const client = await open("node02", { cols: 100, rows: 30 });
    client.input("stty size\r");
    await client.waitForText("30 100");
    client.send({ type: "resize", cols: 132, rows: 43 });
    client.input("stty size\r");
    await client.waitForText("43 132");
    await client.close();
  });

  it("lets a read-only viewer watch but not type", async () => {
    const writer = await open("node02");
    const watcher = await TerminalTestClient.connect(stack.wsUrl, {
      token: stack.token(sessionId, "node02", "read", "instructor"),
      offset: writer.offset,
    });
    await watcher.waitFor((c) => c.messages.some((m) => m.type === "ready" && m.mode === "read"));
    watcher.input("echo SHOULD-NOT-RUN\r");
    watcher.send({ type: "resize", cols: 20, rows: 5 });
    writer.input("echo from-writer-$((1+1)); stty size\r");
    await watcher.waitForText("from-writer-2");
    await writer.waitForText(/\d+ \d+\r\n/);
    expect(writer.text()).not.toContain("SHOULD-NOT-RUN");
    expect(writer.text()).not.toContain("5 20");
    await Promise.all([writer.close(), watcher.close()]);
  });

  it("tells a read-only viewer the writer's size on attach and on every resize; the viewer cannot resize", async () => {
    const session = await stack.startSession("learner-size");
    const writer = await TerminalTestClient.connect(stack.wsUrl, { token: stack.token(session, "node01"), cols: 132, rows: 40 });
    await writer.waitFor((c) => c.messages.some((m) => m.type === "status" && m.state === "connected"), 20_000, "connected");
    const sizes = (c: TerminalTestClient) => c.messages.flatMap((m) => (m.type === "size" ? [`${m.cols}x${m.rows}`] : []));
    // The watcher says hello with its own, narrower pane size: the PTY keeps the writer's.
    const watcher = await TerminalTestClient.connect(stack.wsUrl, {
      token: stack.token(session, "node01", "read", "instructor"),
      cols: 40,
      rows: 10,
    });
    await watcher.waitFor((c) => sizes(c).length > 0, 10_000, "size on attach");
    expect(sizes(watcher)).toEqual(["132x40"]);

    writer.send({ type: "resize", cols: 100, rows: 30 });
    await watcher.waitFor((c) => sizes(c).includes("100x30"), 10_000, "size after resize");
    watcher.send({ type: "resize", cols: 20, rows: 5 });
    writer.input("stty size; echo SIZE-$((2+3))\r");
    await writer.waitForText("SIZE-5\r\n");
    expect(writer.text()).toContain("30 100\r\n");
    await watcher.waitForText("SIZE-5\r\n"); // the watcher saw the same output...
    expect(sizes(watcher)).toEqual(["132x40", "100x30"]); // ...and no size from its own resize
    expect(sizes(writer)).toEqual([]); // the writer is never sent its own size
    await Promise.all([writer.close(), watcher.close()]);
  });

  it("refuses a machine whose host key is not the pinned one", async () => {
    const session = await stack.startSession("learner-mitm");
    const node02Key = stack.hosts.hosts.find((h) => h.name === "node02")!.hostKey;
    await stack.db.machine.updateMany({ where: { sessionId: session, name: "node01" }, data: { hostKey: node02Key } });
    const client = await TerminalTestClient.connect(stack.wsUrl, { token: stack.token(session, "node01") });
    await client.waitFor((c) => c.messages.some((m) => m.type === "status" && m.state === "refused"), 20_000, "refused");
    const status = client.messages.find((m) => m.type === "status" && m.state === "refused") as { message?: string };
    expect(status.message).toContain("ホスト鍵");
    client.input("echo NO-SHELL\r");
    await new Promise((r) => setTimeout(r, 500));
    expect(client.text()).not.toContain("NO-SHELL");
    await client.close();
  });

  describe("bad clients are closed with a 44xx code and the server keeps serving", () => {
    const cases: { name: string; act: (c: TerminalTestClient) => void; code: number }[] = [
      { name: "input before hello", act: (c) => c.input("ls\r"), code: CloseCode.unauthorized },
      { name: "garbage text", act: (c) => c.sendRaw("{not json"), code: CloseCode.badMessage },
      { name: "unknown message type", act: (c) => c.sendRaw(JSON.stringify({ type: "exec", cmd: "id" })), code: CloseCode.badMessage },
      { name: "binary frame", act: (c) => c.sendRaw(Buffer.from([1, 2, 3]), true), code: CloseCode.badMessage },
      {
        name: "forged token",
        act: (c) => {
          const token = stack.token(sessionId, "node01");
          const forged = token.slice(0, -1) + (token.endsWith("A") ? "B" : "A");
          c.send({ type: "hello", token: forged, offset: 0, cols: 80, rows: 24 });
        },
        code: CloseCode.unauthorized,
      },
      {
        name: "resize out of bounds in hello",
        act: (c) =>
          c.sendRaw(JSON.stringify({ type: "hello", token: stack.token(sessionId, "node01"), offset: 0, cols: 100000, rows: 24 })),
        code: CloseCode.badMessage,
      },
      {
        name: "token for a session that does not exist",
        act: (c) => c.send({ type: "hello", token: stack.token("no-such-session", "node01"), offset: 0, cols: 80, rows: 24 }),
        code: CloseCode.notFound,
      },
      { name: "oversized frame", act: (c) => c.sendRaw("x".repeat(MAX_CLIENT_FRAME_BYTES + 10)), code: 1009 },
    ];

    it.each(cases)("$name", async ({ act, code }) => {
      const healthy = await open("node01");
      const bad = await TerminalTestClient.connect(stack.wsUrl, null);
      act(bad);
      const closed = await bad.waitForClose();
      expect(closed.code).toBe(code);
      if (code !== 1009) expect(closed.reason.length).toBeGreaterThan(0);
      healthy.input("echo still-alive-$((3*3))\r");
      await healthy.waitForText("still-alive-9");
      await healthy.close();
    });

    it("closes a socket that never says hello", async () => {
      const bad = await TerminalTestClient.connect(stack.wsUrl, null);
      const closed = await bad.waitForClose(10_000);
      expect(closed).toEqual({ code: CloseCode.unauthorized, reason: "hello timeout" });
    });

    it("refuses a cross-origin browser socket", async () => {
      await expect(
        TerminalTestClient.connect(stack.wsUrl, { token: stack.token(sessionId, "node01") }, { Origin: "http://evil.example" }),
      ).rejects.toThrow("HTTP 403");
    });
  });
});
