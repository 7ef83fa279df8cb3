/**
 * The gateway's handling of a malformed-frame flood on loopback, without sshd or a database: the
 * real terminalUpgrade and WebSocket server, with the terminal registry and authorizer faked at
 * the far edge (no frame of this flood ever gets past hello, so neither is reached; the fuzz with a
 * live learner terminal is fuzz.test.ts). 100,000 frames over 20 sockets: every socket is closed
 * with a protocol code and the log gets about one line per socket, not one per frame.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, expect, it } from "vitest";
import WebSocket from "ws";
import type { Logger } from "pino";
import type { TerminalRegistry } from "./registry";
import { terminalUpgrade } from "../http/terminal-upgrade";

let server: http.Server;
let url: string;
const lines: string[] = [];
const log = {
  info: (_o: unknown, m: string) => lines.push(m),
  warn: (_o: unknown, m: string) => lines.push(m),
  error: (_o: unknown, m: string) => lines.push(m),
} as unknown as Logger;

beforeAll(async () => {
  const gateway = terminalUpgrade({
    secret: Buffer.alloc(32, 7),
    terminals: {} as TerminalRegistry,
    log,
    authorize: async () => null,
  });
  server = http.createServer((_req, res) => res.writeHead(404).end());
  server.on("upgrade", (req, socket, head) => {
    if (!gateway.handle(req, socket, head)) socket.destroy();
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  url = `ws://127.0.0.1:${(server.address() as AddressInfo).port}/ws/terminal`;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

it("100,000 malformed frames over 20 sockets: each socket closed with a protocol code, ~1 log line per socket", async () => {
  const origin = new URL(url.replace(/^ws/, "http")).origin;
  const before = process.memoryUsage().rss;
  const frames = [
    (i: number) => `junk ${i}`,
    (i: number) => Buffer.from([i & 0xff]),
    () => '{"type":"input","data":"x"}',
    () => '{"type":"hello","token":"bad.token","offset":0,"cols":80,"rows":24}',
  ];
  const one = (n: number) =>
    new Promise<{ sent: number; code: number }>((resolve) => {
      const ws = new WebSocket(url, { headers: { origin } });
      let sent = 0;
      ws.on("open", () => {
        for (let i = 0; i < 5_000; i++) {
          const f = frames[(n + i) % frames.length]!(i);
          ws.send(f, { binary: Buffer.isBuffer(f) });
          sent++;
        }
      });
      ws.on("error", () => undefined);
      ws.on("close", (code) => resolve({ sent, code }));
    });
  const results: { sent: number; code: number }[] = [];
  for (let wave = 0; wave < 5; wave++) results.push(...(await Promise.all([0, 1, 2, 3].map((k) => one(wave * 4 + k)))));
  const after = process.memoryUsage().rss;
  const sent = results.reduce((n, r) => n + r.sent, 0);
  console.log(
    `flood: ${sent} frames, ${results.length} sockets, log lines ${lines.length}, RSS ${Math.round(before / 2 ** 20)} → ${Math.round(after / 2 ** 20)} MiB`,
  );
  expect(sent).toBeGreaterThanOrEqual(100_000);
  for (const r of results) expect([4400, 4401]).toContain(r.code);
  expect(lines.length).toBeLessThanOrEqual(results.length * 2);
}, 60_000);

it("a socket without Origin, or from another origin, is refused at the upgrade", async () => {
  for (const headers of [{}, { origin: "http://evil.example" }]) {
    const status = await new Promise<number>((resolve) => {
      const ws = new WebSocket(url, { headers });
      ws.on("unexpected-response", (_req, res) => resolve(res.statusCode ?? 0));
      ws.on("open", () => resolve(101));
      ws.on("error", () => undefined);
    });
    expect(status).toBe(403);
  }
});
