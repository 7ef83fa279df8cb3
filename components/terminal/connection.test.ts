/**
 * The browser's terminal connection on a close from a restarting server: it reconnects at once
 * (no backoff) and reports no error, where any other lost connection waits out the backoff.
 * Real WebSockets on loopback (`ws` as the browser's WebSocket); the server end is a stand-in
 * that records each hello and closes the first socket with the code under test.
 */
import type { AddressInfo } from "node:net";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import WebSocket, { WebSocketServer } from "ws";
import { CloseCode, encodeOutput } from "@/server/terminal/protocol";
import { CONSUMED_EVERY_BYTES, RECONNECT_MIN_MS, TerminalConnection, WRITE_PIECE_BYTES, type ConnectionStatus } from "./connection";

let wss: WebSocketServer;
let hellos: number[];
let closeFirstWith: number | null;
/** Sent after the ready (a test's output frames), and what the page sent back after that. */
let afterReady: ((ws: WebSocket) => void) | null;
let received: { type: string; offset?: number }[];

beforeEach(async () => {
  hellos = [];
  closeFirstWith = null;
  afterReady = null;
  received = [];
  wss = new WebSocketServer({ port: 0, host: "127.0.0.1" });
  await new Promise((r) => wss.once("listening", r));
  wss.on("connection", (ws) => {
    ws.on("message", (raw) => {
      const message = JSON.parse(String(raw)) as { type: string };
      received.push(message);
      if (message.type !== "hello") return;
      hellos.push(performance.now());
      if (hellos.length === 1 && closeFirstWith !== null) return ws.close(closeFirstWith, "server restarting");
      ws.send(JSON.stringify({ type: "ready", machine: "node01", mode: "write", offset: 0 })); // a valid ready (protocol.ts), or the page closes with 4400
      afterReady?.(ws);
    });
  });
  Object.assign(globalThis, { WebSocket, location: { protocol: "http:", host: `127.0.0.1:${(wss.address() as AddressInfo).port}` } });
});

afterEach(async () => {
  for (const ws of wss.clients) ws.terminate();
  await new Promise((r) => wss.close(r));
});

/** First-step backoff waits the page scheduled (RECONNECT_MIN_MS plus up to 30 % jitter) while `fn` ran. */
async function backoffsDuring<T>(fn: () => Promise<T>): Promise<{ result: T; backoffs: number[] }> {
  const backoffs: number[] = [];
  const original = globalThis.setTimeout;
  const spy = vi.spyOn(globalThis, "setTimeout").mockImplementation(((handler: () => void, ms?: number) => {
    if (ms !== undefined && ms >= RECONNECT_MIN_MS && ms <= RECONNECT_MIN_MS * 1.3) backoffs.push(ms);
    return original(handler, ms);
  }) as typeof setTimeout);
  try {
    return { result: await fn(), backoffs };
  } finally {
    spy.mockRestore();
  }
}

async function reconnectAfterClose(code: number) {
  closeFirstWith = code;
  const statuses: { status: ConnectionStatus; message?: string }[] = [];
  const connection = new TerminalConnection(
    "node01",
    async () => "token",
    { write() {}, reset() {}, size: () => ({ cols: 80, rows: 24 }) },
    {
      onStatus: (status, message) => statuses.push({ status, message }),
      messages: {
        lost: "LOST",
        closeUnauthorized: "",
        closeForbidden: "",
        closeNotFound: "",
        sessionOver: () => "",
        closed: () => "CLOSED",
        revoked: () => "REVOKED",
        notice: (notice, machine) => `NOTICE ${notice} ${machine}`,
        reason: (reason, machine) => `REASON ${reason} ${machine}`,
      },
    },
  );
  connection.start();
  const deadline = Date.now() + 5_000;
  while (hellos.length < 2 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
  connection.stop();
  expect(hellos).toHaveLength(2);
  return { statuses };
}

describe("TerminalConnection on a server restart", () => {
  it("reconnects at once on CloseCode.restarting, without the lost-connection message", async () => {
    const { result, backoffs } = await backoffsDuring(() => reconnectAfterClose(CloseCode.restarting));
    const { statuses } = result;
    // No backoff wait between the close and the second hello: it reconnected at once.
    expect(backoffs).toEqual([]);
    expect(statuses[0]).toEqual({ status: "reconnecting", message: undefined });
    expect(
      statuses.some((s) => s.message === "LOST" || s.status === "failed"),
      JSON.stringify(statuses),
    ).toBe(false);
  });

  it("waits out the backoff and says the connection was lost on any other close", async () => {
    const { result, backoffs } = await backoffsDuring(() => reconnectAfterClose(CloseCode.internal));
    const { statuses } = result;
    // One backoff wait of at least RECONNECT_MIN_MS before the second hello.
    expect(backoffs).toHaveLength(1);
    expect(statuses[0]).toEqual({ status: "reconnecting", message: "LOST" });
  });
});

describe("TerminalConnection's own words", () => {
  it("words a keyed notice and a status reason in the page's language, and shows a server's own words when it sends no key", async () => {
    afterReady = (ws) => {
      ws.send(JSON.stringify({ type: "notice", notice: "rebooted", text: "[server words]" }));
      ws.send(JSON.stringify({ type: "notice", text: "[older server words]" }));
      ws.send(JSON.stringify({ type: "status", state: "unreachable", reason: "unreachable", message: "server words" }));
    };
    const written: string[] = [];
    const statuses: { status: ConnectionStatus; message?: string }[] = [];
    const connection = new TerminalConnection(
      "node01",
      async () => "token",
      { write: (piece) => void written.push(new TextDecoder().decode(piece)), reset() {}, size: () => ({ cols: 80, rows: 24 }) },
      {
        onStatus: (status, message) => statuses.push({ status, message }),
        messages: {
          lost: "",
          closeUnauthorized: "",
          closeForbidden: "",
          closeNotFound: "",
          sessionOver: () => "",
          closed: () => "",
          revoked: () => "",
          notice: (notice, machine) => `NOTICE ${notice} ${machine}`,
          reason: (reason, machine) => `REASON ${reason} ${machine}`,
        },
      },
    );
    connection.start();
    await vi.waitFor(() => expect(statuses.at(-1)).toEqual({ status: "unreachable", message: "REASON unreachable node01" }), {
      timeout: 5_000,
    });
    connection.stop();
    expect(written.join("")).toBe("\r\nNOTICE rebooted node01\r\n[older server words]");
  });
});

describe("TerminalConnection output to xterm", () => {
  it("writes a large output frame in pieces of at most WRITE_PIECE_BYTES (xterm yields only between writes), and reports consumed only once the last is written", async () => {
    const data = new Uint8Array(100 * 1024).map((_, i) => 32 + (i % 90));
    afterReady = (ws) => ws.send(encodeOutput(0, data));
    const pieces: Uint8Array[] = [];
    const callbacks: (() => void)[] = [];
    const connection = new TerminalConnection(
      "node01",
      async () => "token",
      {
        write(piece, written) {
          pieces.push(piece.slice());
          if (written) callbacks.push(written);
        },
        reset() {},
        size: () => ({ cols: 80, rows: 24 }),
      },
      {
        onStatus: () => undefined,
        messages: {
          lost: "",
          closeUnauthorized: "",
          closeForbidden: "",
          closeNotFound: "",
          sessionOver: () => "",
          closed: () => "",
          revoked: () => "",
          notice: () => "",
          reason: () => "",
        },
      },
    );
    connection.start();
    const deadline = Date.now() + 5_000;
    while (pieces.reduce((n, p) => n + p.byteLength, 0) < data.byteLength && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 5));
    expect(pieces.map((p) => p.byteLength)).toEqual([16, 16, 16, 16, 16, 16, 4].map((k) => k * 1024));
    expect(pieces.every((p) => p.byteLength <= WRITE_PIECE_BYTES)).toBe(true);
    expect(Buffer.concat(pieces).equals(Buffer.from(data))).toBe(true);
    expect(callbacks).toHaveLength(1); // the last piece's
    expect(received.some((m) => m.type === "consumed")).toBe(false);
    callbacks[0]!();
    while (!received.some((m) => m.type === "consumed") && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
    connection.stop();
    expect(data.byteLength).toBeGreaterThan(CONSUMED_EVERY_BYTES);
    expect(received.find((m) => m.type === "consumed")).toMatchObject({ offset: data.byteLength });
  });
});
