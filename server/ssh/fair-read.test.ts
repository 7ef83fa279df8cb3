/**
 * readFairly on loopback TCP: a connection that streams is read within the process's read budget
 * (read-budget.ts), one 64 KiB read per turn of the event loop here, so a small message on another
 * connection (a keystroke's echo) waits behind one read of the flood, not behind dozens (libuv
 * reads a ready socket up to 32 times before the next).
 */
import net from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { ReadBudget, SMALL_READ_BYTES } from "./read-budget";
import { readFairly } from "./connect";

const FLOOD_BYTES = 32 * 1024 * 1024;
const opened: (net.Server | net.Socket)[] = [];
afterEach(() => {
  for (const o of opened.splice(0)) {
    if (o instanceof net.Server) o.close();
    else o.destroy();
  }
});

/** A connected pair over loopback: [the server's end, the client's end]. */
async function pair(): Promise<[net.Socket, net.Socket]> {
  const server = net.createServer();
  opened.push(server);
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const accepted = new Promise<net.Socket>((r) => server.once("connection", r));
  const client = net.connect((server.address() as net.AddressInfo).port, "127.0.0.1");
  await new Promise((r) => client.once("connect", r));
  const far = await accepted;
  opened.push(client, far);
  return [far, client];
}

/** Reads a flood on `sock` to its end, counting bulk reads per event-loop turn (setImmediate ticks). */
async function bulkReadsPerTurn(fair: boolean): Promise<{ most: number; bytes: number }> {
  const [far, sock] = await pair();
  if (fair) readFairly(sock, new ReadBudget());
  let turn = 0;
  let ticking = true;
  const tick = () => {
    turn++;
    if (ticking) setImmediate(tick);
  };
  setImmediate(tick);
  const perTurn = new Map<number, number>();
  let bytes = 0;
  sock.on("data", (chunk: Buffer) => {
    bytes += chunk.byteLength;
    if (chunk.byteLength >= SMALL_READ_BYTES) perTurn.set(turn, (perTurn.get(turn) ?? 0) + 1);
  });
  far.end(Buffer.alloc(FLOOD_BYTES, 0x79));
  await new Promise((r) => sock.once("end", r));
  ticking = false;
  return { most: Math.max(...perTurn.values()), bytes };
}

describe("readFairly", () => {
  it("reads a flooding connection a quantum per loop turn (a read or two), every byte", async () => {
    const fair = await bulkReadsPerTurn(true);
    expect(fair.bytes).toBe(FLOOD_BYTES);
    expect(fair.most).toBeLessThanOrEqual(2); // READ_QUANTUM_BYTES is one 64 KiB read, or a short one and a full one
  });

  it("(the control, without it) libuv reads the same flood many times in one turn", async () => {
    const plain = await bulkReadsPerTurn(false);
    expect(plain.bytes).toBe(FLOOD_BYTES);
    expect(plain.most).toBeGreaterThan(2);
  });

  it("lets a small message on another connection through while a flood is read", async () => {
    const [floodFar, flood] = await pair();
    const [echoFar, echo] = await pair();
    readFairly(flood, new ReadBudget());
    let floodReadsBeforeEcho = -1;
    let floodReads = 0;
    flood.on("data", () => floodReads++);
    const got = new Promise<void>((r) => echo.once("data", () => ((floodReadsBeforeEcho = floodReads), r())));
    floodFar.end(Buffer.alloc(FLOOD_BYTES, 0x79));
    await new Promise((r) => flood.once("data", r)); // the flood is being read
    const sent = floodReads;
    echoFar.write("a");
    await got;
    // One turn at most: the flood's read in this turn and, in the next, at most one before the echo.
    expect(floodReadsBeforeEcho - sent).toBeLessThanOrEqual(2);
  });

  it("a connection closed while it waits its turn leaves the line, and nothing is read or resumed after", async () => {
    const [far, sock] = await pair();
    const budget = new ReadBudget();
    readFairly(sock, budget);
    let readsAfterClose = 0;
    let closed = false;
    const errors: Error[] = [];
    sock.on("error", (e) => errors.push(e));
    sock.on("data", () => {
      if (closed) readsAfterClose++;
      else if (budget.waiting > 0) {
        closed = true; // the process's end of the connection goes while the flood waits in line
        sock.destroy();
      }
    });
    far.on("error", () => undefined); // the far end sees the reset
    far.write(Buffer.alloc(FLOOD_BYTES, 0x79));
    await new Promise((r) => sock.once("close", r));
    for (let turn = 0; turn < 5; turn++) await new Promise((r) => setImmediate(r));
    expect(closed).toBe(true);
    expect(budget.waiting).toBe(0);
    expect(readsAfterClose).toBe(0);
    expect(errors).toEqual([]);
  });
});
