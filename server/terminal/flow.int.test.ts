/**
 * Flow control of the terminal path against real sshd hosts (netns) with the real holder, real
 * PostgreSQL and the real gateway over real WebSockets. Counted, not timed:
 *  - a terminal flooding (`yes`) with no viewer is not read by the gateway (its bytes relayed stay
 *    bounded while the holder keeps the log), and another terminal's echo on the same machine
 *    still comes; a viewer that comes back gets the flood from where it was and Ctrl-C stops it;
 *  - a page that asked for a window and stops reporting `consumed` is sent at most that window;
 *  - input sent just before the socket closes is applied, also when the socket closes before
 *    the gateway has attached it.
 * Run under the shared lock: flock /tmp/labdeck-test.lock npx vitest run server/terminal/flow.int.test.ts
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import WebSocket from "ws";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestStack, type TestStack } from "../testing/stack";
import { TerminalTestClient } from "../testing/terminal-client";
import { MIN_WINDOW_BYTES } from "./protocol";
import { MAX_FRAME_BYTES } from "./gateway";

const SUBNET = 88; // 10.213.88.0/24
const MACHINE = "node01";
/** What the gateway may still read after it paused a terminal: ssh2's data already in hand, bytes. */
const READ_AFTER_PAUSE_BYTES = 1024 * 1024;
/** How long a flood runs while we count what was relayed, ms (a `yes` writes well over 10 MiB meanwhile). */
const FLOOD_MS = 2_000;

let stack: TestStack;
let dir: string;

beforeAll(async () => {
  stack = await startTestStack({ subnet: SUBNET });
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "labdeck-flow-"));
}, 120_000);

afterAll(async () => {
  await stack?.stop();
  fs.rmSync(dir, { recursive: true, force: true });
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function open(sid: string, extra: { offset?: number; window?: number } = {}) {
  const client = await TerminalTestClient.connect(stack.wsUrl, { token: stack.token(sid, MACHINE), ...extra });
  await client.waitFor((c) => c.messages.some((m) => m.type === "status" && m.state === "connected"), 20_000, "connected");
  return client;
}

/** Bytes the gateway has read of a terminal's output so far (its session's log end). */
async function relayed(sid: string): Promise<number> {
  const terminal = await stack.terminals.get(sid, MACHINE);
  return terminal!.endOffset;
}

/** Waits until `file` exists (the shell on the netns host shares this machine's file system). */
async function waitForFile(file: string, timeoutMs = 15_000): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (fs.existsSync(file)) return true;
    await sleep(100);
  }
  return false;
}

describe("terminal flow control (real sshd + holder)", () => {
  it("does not read a terminal that floods with no viewer; another terminal still echoes; Ctrl-C then stops the flood", async () => {
    const flooder = await stack.startSession("learner-flood");
    const typist = await stack.startSession("learner-typist");
    const flood = await open(flooder);
    flood.input("yes flood-line\r");
    await flood.waitFor((c) => c.offset > 1024 * 1024, 20_000, "the flood");
    flood.chunks.length = 0;
    await flood.close();
    await sleep(300); // what was in flight lands

    const before = await relayed(flooder);
    const typing = await open(typist);
    await sleep(FLOOD_MS);
    typing.input("echo typed-$((40+2))\r");
    await typing.waitForText("typed-42", 20_000);
    const after = await relayed(flooder);
    expect(after - before).toBeLessThan(READ_AFTER_PAUSE_BYTES);

    // The holder kept the log: a viewer back at its offset gets the flood from there (or a snapshot), not a blank.
    const back = await open(flooder, { offset: flood.offset });
    await back.waitFor((c) => c.offset > flood.offset + 64 * 1024, 20_000, "the flood again");
    const marker = path.join(dir, "after-ctrl-c");
    back.input("\x03");
    back.input(`touch ${marker}\r`);
    expect(await waitForFile(marker)).toBe(true);
    await back.close();
    await typing.close();
  });

  it("sends a page that stops reporting what it consumed no more than its window", async () => {
    const sid = await stack.startSession("learner-window");
    const client = await open(sid, { window: MIN_WINDOW_BYTES });
    client.input("yes window-line\r");
    await client.waitFor((c) => c.offset > MIN_WINDOW_BYTES / 2, 20_000, "output");
    await sleep(FLOOD_MS);
    const got = client.offset;
    // The window, plus what one holder frame added to it when the window filled.
    expect(got).toBeLessThanOrEqual(MIN_WINDOW_BYTES + MAX_FRAME_BYTES + 4096);
    const readBefore = await relayed(sid);
    await sleep(500);
    expect((await relayed(sid)) - readBefore).toBeLessThan(READ_AFTER_PAUSE_BYTES);

    client.send({ type: "consumed", offset: got });
    await client.waitFor((c) => c.offset > got, 10_000, "more output after consumed");
    client.input("\x03");
    await client.close();
  });

  it("applies input sent just before the socket closes, also before the gateway attached it", async () => {
    const sid = await stack.startSession("learner-close");
    const ready = await open(sid);
    const first = path.join(dir, "typed-then-closed");
    ready.input(`touch ${first}\r`);
    ready.ws.close(1000); // same tick as the input
    expect(await waitForFile(first)).toBe(true);

    // Closed right after hello + input, before the gateway has authorized and attached the socket.
    const early = path.join(dir, "typed-before-ready");
    const ws = new WebSocket(stack.wsUrl, { headers: { origin: new URL(stack.wsUrl.replace(/^ws/, "http")).origin } });
    await new Promise<void>((resolve, reject) => {
      ws.once("open", () => resolve());
      ws.once("error", reject);
    });
    ws.send(JSON.stringify({ type: "hello", token: stack.token(sid, MACHINE), offset: 0, cols: 80, rows: 24, writer: "closer" }));
    ws.send(JSON.stringify({ type: "input", seq: 1, data: `touch ${early}\r` }));
    ws.close(1000);
    expect(await waitForFile(early)).toBe(true);
  });
});
