/**
 * Numbered input on one socket must come in order: a gap (seq 3 after 1) closes the socket with
 * 4400 "input out of order" and the out-of-order input never reaches the terminal, where the
 * holder would have applied 3 and then dropped 2 as a repeat. The real terminalUpgrade and
 * WebSocket server on loopback; the terminal registry is faked at the far edge (a terminal that
 * records the input it is handed).
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, expect, it } from "vitest";
import WebSocket from "ws";
import type { Logger } from "pino";
import type { TerminalRegistry } from "./registry";
import type { Terminal } from "./terminal";
import { signTerminalToken } from "./token";
import { terminalUpgrade } from "../http/terminal-upgrade";

const secret = Buffer.alloc(32, 9);
const received: (number | undefined)[] = [];
const terminal = {
  machine: "web",
  attach: () => undefined,
  detach: () => undefined,
  resize: () => true,
  input: (_viewer: unknown, _data: string, seq?: number) => {
    received.push(seq);
    return true;
  },
} as unknown as Terminal;
let server: http.Server;
let url: string;

beforeAll(async () => {
  const quiet = { info: () => undefined, warn: () => undefined, error: () => undefined } as unknown as Logger;
  const terminals = { get: async () => terminal } as unknown as TerminalRegistry;
  const gateway = terminalUpgrade({ secret, terminals, log: quiet, authorize: async () => null });
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

/** Opens a socket, says hello as a writer, sends the input seqs once ready; the close code and reason. */
function sendSeqs(seqs: number[]): Promise<{ code: number; reason: string }> {
  const origin = new URL(url.replace(/^ws/, "http")).origin;
  const token = signTerminalToken(secret, { sid: "s1", m: "web", mode: "write", sub: "u1" });
  return new Promise((resolve) => {
    const ws = new WebSocket(url, { headers: { origin } });
    ws.on("open", () => ws.send(JSON.stringify({ type: "hello", token, offset: 0, cols: 80, rows: 24, writer: "w1" })));
    ws.on("message", (raw, binary) => {
      if (binary || (JSON.parse(String(raw)) as { type: string }).type !== "ready") return;
      for (const seq of seqs) ws.send(JSON.stringify({ type: "input", data: `k${seq}`, seq }));
      setTimeout(() => ws.close(1000, "done"), 200);
    });
    ws.on("error", () => undefined);
    ws.on("close", (code, reason) => resolve({ code, reason: String(reason) }));
  });
}

it("input in order (resumed from any number) goes through; a gap closes with 4400 and goes no further", async () => {
  received.length = 0;
  expect(await sendSeqs([5, 6, 7])).toMatchObject({ code: 1000 });
  expect(received).toEqual([5, 6, 7]);

  received.length = 0;
  expect(await sendSeqs([1, 3, 2])).toEqual({ code: 4400, reason: "input out of order" });
  expect(received).toEqual([1]);
});
