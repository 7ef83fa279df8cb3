/**
 * WebSocket fuzz of the terminal gateway over real sshd hosts (network namespaces), a real
 * PostgreSQL and the real gateway: several clients send ≥100,000 malformed frames (garbage text,
 * binary, bad JSON, wrong types, bad tokens, messages before hello — most of them after the
 * gateway already decided to close) while a learner's terminal keeps echoing. The server stays
 * up, memory returns within bounds and log lines stay bounded (about one per socket, never one per
 * frame). RSS and the echo p99 are printed.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import WebSocket from "ws";
import { log } from "../log";
import { startTestStack, type TestStack } from "../testing/stack";
import { TerminalTestClient } from "../testing/terminal-client";

let stack: TestStack;
let sessionId: string;

beforeAll(async () => {
  stack = await startTestStack({ subnet: 58 });
  sessionId = await stack.startSession("learner-fuzz");
}, 120_000);

afterAll(async () => {
  await stack?.stop();
});

const FRAMES_PER_SOCKET = 5_000;
const SOCKETS = 24;
const CLIENTS_AT_ONCE = 4;

/** The kinds of bad first frame a socket starts with; the rest of its frames follow regardless. */
const BAD: ((i: number) => string | Buffer)[] = [
  (i) => `garbage ${i} \u0000\uffff`,
  (i) => Buffer.from([0, 1, 2, i & 0xff]),
  () => '{"type":',
  (i) => JSON.stringify({ type: "input", data: `x${i}` }), // before hello
  () => JSON.stringify({ type: "hello", token: "not.a.token", offset: 0, cols: 80, rows: 24 }),
  () => JSON.stringify({ type: "resize", cols: -1, rows: 1e9 }),
  () => JSON.stringify({ type: "hello", token: 42 }),
  () => JSON.stringify([1, 2, 3]),
];

/** Opens one socket and sends FRAMES_PER_SOCKET frames as fast as it can; resolves when it closes. */
function attack(url: string, n: number): Promise<{ sent: number; code: number }> {
  return new Promise((resolve) => {
    const ws = new WebSocket(url, { headers: { origin: new URL(url.replace(/^ws/, "http")).origin } });
    let sent = 0;
    ws.on("open", () => {
      for (let i = 0; i < FRAMES_PER_SOCKET; i++) {
        const frame = BAD[(n + i) % BAD.length]!(i);
        try {
          ws.send(frame, { binary: Buffer.isBuffer(frame) });
          sent++;
        } catch {
          break;
        }
      }
    });
    ws.on("error", () => undefined);
    ws.on("close", (code) => resolve({ sent, code }));
  });
}

const mib = (n: number) => Math.round((n / 1024 / 1024) * 10) / 10;

describe("terminal gateway under a malformed-frame flood", () => {
  it("stays up, keeps echoing, gives memory back and logs about one line per socket", async () => {
    const learner = await TerminalTestClient.connect(stack.wsUrl, { token: stack.token(sessionId, "node01") });
    await learner.waitFor((c) => c.messages.some((m) => m.type === "status" && m.state === "connected"), 20_000, "connected");
    const lines = { count: 0 };
    const spies = (["info", "warn", "error"] as const).map((level) =>
      vi.spyOn(log, level).mockImplementation(function (this: unknown) {
        lines.count++;
      } as never),
    );
    const before = process.memoryUsage().rss;
    let peak = before;
    const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 100);

    // The learner's echo loop, measured throughout.
    const latencies: number[] = [];
    let flooding = true;
    const echo = (async () => {
      for (let i = 0; flooding; i++) {
        const t = performance.now();
        learner.input(`echo fz-${i}-$((6*7))\r`);
        await learner.waitForText(`fz-${i}-42`, 20_000);
        latencies.push(performance.now() - t);
        await new Promise((r) => setTimeout(r, 20));
      }
    })();

    const results: { sent: number; code: number }[] = [];
    for (let wave = 0; wave < SOCKETS / CLIENTS_AT_ONCE; wave++) {
      results.push(
        ...(await Promise.all(Array.from({ length: CLIENTS_AT_ONCE }, (_, k) => attack(stack.wsUrl, wave * CLIENTS_AT_ONCE + k)))),
      );
    }
    flooding = false;
    await echo;
    const during = lines.count;
    await new Promise((r) => setTimeout(r, 3_000));
    clearInterval(sampler);
    const after = process.memoryUsage().rss;
    for (const s of spies) s.mockRestore();

    const sent = results.reduce((n, r) => n + r.sent, 0);
    latencies.sort((a, b) => a - b);
    const p99 = latencies[Math.floor(latencies.length * 0.99)] ?? NaN;
    const p50 = latencies[Math.floor(latencies.length * 0.5)] ?? NaN;
    console.log(
      `fuzz: ${sent} malformed frames over ${results.length} sockets (${CLIENTS_AT_ONCE} at once); close codes ${[...new Set(results.map((r) => r.code))].join(",")}; ` +
        `log lines ${during}; RSS before ${mib(before)} MiB, peak ${mib(peak)} MiB, after ${mib(after)} MiB; ` +
        `echo round trips ${latencies.length}, p50 ${p50.toFixed(1)} ms, p99 ${p99.toFixed(1)} ms`,
    );
    expect(sent).toBeGreaterThanOrEqual(100_000);
    for (const r of results) expect([4400, 4401]).toContain(r.code);
    expect(during).toBeLessThanOrEqual(results.length * 3);
    expect(after - before).toBeLessThan(150 * 1024 * 1024);
    expect(latencies.length).toBeGreaterThan(5);

    // Still serving: a fresh terminal socket works.
    learner.input("echo still-$((40+2))\r");
    await learner.waitForText("still-42");
    await learner.close();
  }, 240_000);
});
