/**
 * The browser's terminal connection on a close from a restarting server: it reconnects at once
 * (no backoff) and reports no error, where any other lost connection waits out the backoff.
 * Real WebSockets on loopback (`ws` as the browser's WebSocket); the server end is a stand-in
 * that records each hello and closes the first socket with the code under test.
 */
import type { AddressInfo } from "node:net";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import WebSocket, { WebSocketServer } from "ws";
import { CloseCode } from "@/server/terminal/protocol";
import { TerminalConnection, type ConnectionStatus } from "./connection";

let wss: WebSocketServer;
let hellos: number[];
let closeFirstWith: number;

beforeEach(async () => {
  hellos = [];
  wss = new WebSocketServer({ port: 0, host: "127.0.0.1" });
  await new Promise((r) => wss.once("listening", r));
  wss.on("connection", (ws) => {
    ws.on("message", (raw) => {
      const message = JSON.parse(String(raw)) as { type: string };
      if (message.type !== "hello") return;
      hellos.push(performance.now());
      if (hellos.length === 1) ws.close(closeFirstWith, "server restarting");
      else ws.send(JSON.stringify({ type: "ready", machine: "node01", mode: "write", offset: 0 })); // a valid ready (protocol.ts), or the page closes with 4400
    });
  });
  Object.assign(globalThis, { WebSocket, location: { protocol: "http:", host: `127.0.0.1:${(wss.address() as AddressInfo).port}` } });
});

afterEach(async () => {
  for (const ws of wss.clients) ws.terminate();
  await new Promise((r) => wss.close(r));
});

async function reconnectAfterClose(code: number) {
  closeFirstWith = code;
  const statuses: { status: ConnectionStatus; message?: string }[] = [];
  const connection = new TerminalConnection(
    "node01",
    async () => "token",
    { write() {}, reset() {}, size: () => ({ cols: 80, rows: 24 }) },
    {
      onStatus: (status, message) => statuses.push({ status, message }),
      messages: { lost: "LOST", closeUnauthorized: "", closeForbidden: "", closeNotFound: "", sessionOver: () => "", closed: () => "CLOSED", revoked: () => "REVOKED" },
    },
  );
  connection.start();
  const deadline = Date.now() + 5_000;
  while (hellos.length < 2 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
  connection.stop();
  expect(hellos).toHaveLength(2);
  return { gapMs: hellos[1]! - hellos[0]!, statuses };
}

describe("TerminalConnection on a server restart", () => {
  it("reconnects at once on CloseCode.restarting, without the lost-connection message", async () => {
    const { gapMs, statuses } = await reconnectAfterClose(CloseCode.restarting);
    // Backoff would wait at least RECONNECT_MIN_MS (300 ms); this is one loopback connect.
    expect(gapMs).toBeLessThan(150);
    expect(statuses[0]).toEqual({ status: "reconnecting", message: undefined });
    expect(statuses.some((s) => s.message === "LOST" || s.status === "failed"), JSON.stringify(statuses)).toBe(false);
  });

  it("waits out the backoff and says the connection was lost on any other close", async () => {
    const { gapMs, statuses } = await reconnectAfterClose(CloseCode.internal);
    expect(gapMs).toBeGreaterThanOrEqual(290);
    expect(statuses[0]).toEqual({ status: "reconnecting", message: "LOST" });
  });
});
