/**
 * The process's read budget on in-memory streams (the far edge: what an SSH socket or a holder
 * link's channel would hand over): per turn of the event loop the process takes about
 * TURN_READ_BYTES in all and each stream about READ_QUANTUM_BYTES, the streams take turns, every
 * byte arrives in order, and small reads (echoes) never wait.
 */
import { Readable } from "node:stream";
import { describe, expect, it } from "vitest";
import { READ_QUANTUM_BYTES, ReadBudget, SMALL_READ_BYTES, TURN_READ_BYTES } from "./read-budget";

const CHUNK = 16 * 1024;

/** `count` streams with `bytes` each already buffered (a flood that came while they were paused). */
function floods(count: number, bytes: number): Readable[] {
  return Array.from({ length: count }, (_, s) => {
    const stream = new Readable({ read() {} });
    for (let at = 0; at < bytes; at += CHUNK) stream.push(Buffer.alloc(CHUNK, s));
    stream.push(null);
    return stream;
  });
}

/**
 * Reads the streams to their ends through `budget`, recording the bytes each took in each turn
 * (a turn starts at a tick scheduled before any of the budget's).
 */
async function readAll(streams: Readable[], budget: ReadBudget): Promise<{ turns: number[][]; bytes: number[]; inOrder: boolean }> {
  const turns: number[][] = [streams.map(() => 0)];
  const bytes = streams.map(() => 0);
  let inOrder = true;
  let ended = 0;
  let done!: () => void;
  const finished = new Promise<void>((r) => (done = r));
  const tick = () => {
    if (ended === streams.length || turns.length > 10_000) return done();
    turns.push(streams.map(() => 0));
    setImmediate(tick);
  };
  setImmediate(tick);
  streams.forEach((stream, s) => {
    const reader = budget.reader(
      () => stream.pause(),
      () => stream.resume(),
    );
    stream.on("data", (chunk: Buffer) => {
      if (chunk[0] !== s) inOrder = false;
      bytes[s]! += chunk.byteLength;
      turns[turns.length - 1]![s]! += chunk.byteLength;
      reader.took(chunk.byteLength);
    });
    stream.on("end", () => ended++);
  });
  await finished;
  return { turns, bytes, inOrder };
}

describe("ReadBudget", () => {
  it("takes about TURN_READ_BYTES per turn in all, and READ_QUANTUM_BYTES per stream, to the last byte", async () => {
    const streams = 20;
    const each = 1024 * 1024;
    const { turns, bytes, inOrder } = await readAll(floods(streams, each), new ReadBudget());
    expect(bytes).toEqual(Array(streams).fill(each));
    expect(inOrder).toBe(true);
    const perTurn = turns.map((t) => t.reduce((a, b) => a + b, 0));
    // A stream counts a read after it was handed over: in the first turn, each of the 20 has its
    // first read before it can wait; after that, the one that crosses the budget ends its read.
    expect(perTurn[0]).toBeLessThanOrEqual(TURN_READ_BYTES + streams * CHUNK);
    expect(Math.max(...perTurn.slice(1))).toBeLessThanOrEqual(TURN_READ_BYTES + CHUNK);
    // About as many turns as the budget implies: no idle turns while streams wait.
    expect(turns.length).toBeLessThan(((streams * each) / TURN_READ_BYTES) * 1.5 + 5);
  });

  it("lets the streams take turns: each has had a quantum within the turns that all of them need", async () => {
    const streams = 20;
    const { turns } = await readAll(floods(streams, 512 * 1024), new ReadBudget());
    const within = Math.ceil((streams * READ_QUANTUM_BYTES) / TURN_READ_BYTES) + 2;
    const early = turns.slice(0, within);
    for (let s = 0; s < streams; s++)
      expect(
        early.reduce((n, t) => n + t[s]!, 0),
        `stream ${s}`,
      ).toBeGreaterThanOrEqual(READ_QUANTUM_BYTES);
  });

  it("never makes a small read wait, even with the turn's budget spent", async () => {
    const budget = new ReadBudget();
    const flood = budget.reader(
      () => undefined,
      () => undefined,
    );
    let echoPaused = 0;
    const echo = budget.reader(
      () => echoPaused++,
      () => undefined,
    );
    expect(flood.took(TURN_READ_BYTES)).toBe(true); // the whole turn's budget: the flood waits
    for (let i = 0; i < 100; i++) expect(echo.took(SMALL_READ_BYTES - 1)).toBe(false);
    expect(echoPaused).toBe(0);
    const another = budget.reader(
      () => undefined,
      () => undefined,
    );
    expect(another.took(CHUNK)).toBe(true); // a bulk read of another stream waits too
    await new Promise((r) => setImmediate(r));
  });

  it("(the control, without a budget) the same streams hand over whole megabytes in one turn", async () => {
    const unlimited = new ReadBudget(Number.MAX_SAFE_INTEGER, Number.MAX_SAFE_INTEGER);
    const { turns } = await readAll(floods(4, 1024 * 1024), unlimited);
    expect(Math.max(...turns.map((t) => t.reduce((a, b) => a + b, 0)))).toBeGreaterThan(TURN_READ_BYTES * 4);
  });
});
