/**
 * The client's checks of what a holder sends (a machine's root can replace the holder): every
 * integer in 0..2^53-1, output that ends by 2^53-1, OPENED with oldest ≤ start ≤ end; each
 * violation closes the link with a typed error (`out-of-range`), and junk, refusals and another
 * protocol have their own kinds. The transport is an in-memory stream (the far edge).
 */
import { Duplex } from "node:stream";
import { describe, expect, it } from "vitest";
import { FRAME_TYPE, HOLDER_PROTOCOL, HolderLink, HolderTerminal } from "./client";
import { HolderMisbehaviourError, isHolderInt, openedInOrder } from "./misbehaviour";

function frame(type: number, body: Buffer): Buffer {
  const head = Buffer.alloc(5);
  head.writeUInt32BE(body.length + 1, 0);
  head.writeUInt8(type, 4);
  return Buffer.concat([head, body]);
}
const json = (type: number, value: object) => frame(type, Buffer.from(JSON.stringify(value)));
/** A JSON frame with one number written as-is (JSON.stringify cannot write 2^60 exactly). */
const rawJson = (type: number, text: string) => frame(type, Buffer.from(text));
function tagged(type: number, id: string, n: bigint, data = Buffer.alloc(0)): Buffer {
  const head = Buffer.alloc(1 + id.length + 8);
  head.writeUInt8(id.length, 0);
  head.write(id, 1);
  head.writeBigUInt64BE(n, 1 + id.length);
  return frame(type, Buffer.concat([head, data]));
}
const hello = (protocol = HOLDER_PROTOCOL) => json(FRAME_TYPE.HELLO, { protocol, version: "v", bootId: "", instance: "abc", pid: 7 });
const MAX = Number.MAX_SAFE_INTEGER;

async function link(): Promise<{ link: HolderLink; stream: Duplex }> {
  const stream = new Duplex({ read() {}, write: (_c, _e, done) => done() });
  const opening = HolderLink.open(stream);
  stream.push(hello());
  return { link: await opening, stream };
}

/** The error the link closes with after `bytes`, or null when it stays open. */
async function closesWith(bytes: Buffer): Promise<HolderMisbehaviourError | null> {
  const { link: l, stream } = await link();
  const closed = new Promise<Error | undefined>((resolve) => l.once("close", resolve));
  l.on("opened", () => undefined);
  l.on("gone", () => undefined);
  l.on("exit", () => undefined);
  stream.push(bytes);
  const error = await Promise.race([closed, new Promise<null>((r) => setTimeout(() => r(null), 20))]);
  l.close();
  if (error === null) return null;
  expect(error).toBeInstanceOf(HolderMisbehaviourError);
  return error as HolderMisbehaviourError;
}

const opened = (o: Partial<Record<"start" | "end" | "oldest" | "lastSeq", number>>) =>
  json(FRAME_TYPE.OPENED, { id: "t1", start: 0, end: 0, oldest: 0, lastSeq: 0, spawned: false, ...o });

describe("holder integers", () => {
  it("are 0..2^53-1, exact as numbers", () => {
    expect([0, 1, MAX].every(isHolderInt)).toBe(true);
    expect([-1, MAX + 1, 2 ** 60, 1.5, NaN, Infinity, "1", null].some(isHolderInt)).toBe(false);
    expect(openedInOrder({ oldest: 1, start: 2, end: 3 })).toBe(true);
    expect(openedInOrder({ oldest: 1, start: 1, end: 1 })).toBe(true);
    expect(openedInOrder({ oldest: 2, start: 1, end: 3 })).toBe(false);
    expect(openedInOrder({ oldest: 0, start: 4, end: 3 })).toBe(false);
  });

  it("out of range in any field, or OPENED out of order, close the link as out-of-range", async () => {
    const cases: [string, Buffer][] = [
      [
        "OPENED start 2^60",
        rawJson(
          FRAME_TYPE.OPENED,
          '{"id":"t1","start":1152921504606846976,"end":1152921504606846976,"oldest":0,"lastSeq":0,"spawned":false}',
        ),
      ],
      ["OPENED end 2^53", opened({ end: MAX + 1 })],
      ["OPENED lastSeq -1", opened({ lastSeq: -1 })],
      ["OPENED start < oldest", opened({ oldest: 5, start: 4, end: 9 })],
      ["OPENED start > end", opened({ start: 10, end: 9 })],
      ["GONE oldest 2^60", rawJson(FRAME_TYPE.GONE, '{"id":"t1","requested":0,"oldest":1152921504606846976}')],
      ["GONE requested -1", json(FRAME_TYPE.GONE, { id: "t1", requested: -1, oldest: 0 })],
      ["EXIT end 2^53", json(FRAME_TYPE.EXIT, { id: "t1", end: MAX + 1, status: 0 })],
      ["OUTPUT at 2^60", tagged(FRAME_TYPE.OUTPUT, "t1", 1n << 60n, Buffer.from("x"))],
      ["OUTPUT ending past 2^53-1", tagged(FRAME_TYPE.OUTPUT, "t1", BigInt(MAX - 3), Buffer.alloc(64, 120))],
      ["ACK seq 2^53", tagged(FRAME_TYPE.ACK, "t1", BigInt(MAX) + 1n)],
    ];
    for (const [name, bytes] of cases) expect((await closesWith(bytes))?.kind, name).toBe("out-of-range");
  });

  it("at the edge (2^53-1, output ending there) pass", async () => {
    expect(await closesWith(opened({ oldest: MAX - 10, start: MAX - 1, end: MAX }))).toBeNull();
    expect(await closesWith(tagged(FRAME_TYPE.OUTPUT, "t1", BigInt(MAX - 1), Buffer.from("x")))).toBeNull();
    expect(await closesWith(json(FRAME_TYPE.EXIT, { id: "t1", end: MAX, status: -9 }))).toBeNull();
  });
});

describe("other holder misbehaviour", () => {
  it("junk is bad-frame, another protocol is protocol", async () => {
    expect((await closesWith(rawJson(FRAME_TYPE.OPENED, "{not json")))?.kind).toBe("bad-frame");
    expect((await closesWith(frame(0x99, Buffer.from("{}"))))?.kind).toBe("bad-frame");
    expect((await closesWith(Buffer.from([0xff, 0xff, 0xff, 0xff, 0x82])))?.kind).toBe("bad-frame");
    const stream = new Duplex({ read() {}, write: (_c, _e, done) => done() });
    const opening = HolderLink.open(stream);
    stream.push(hello(HOLDER_PROTOCOL + 1));
    await expect(opening).rejects.toMatchObject({ kind: "protocol" });
  });

  it("an ERROR for the terminal's OPEN is refused (it no longer leaves the attach waiting)", async () => {
    const { link: l, stream } = await link();
    const attaching = new HolderTerminal("t1", { onOutput: () => undefined }).attach(l);
    stream.push(json(FRAME_TYPE.ERROR, { id: "t1", message: "no" }));
    await expect(attaching).rejects.toMatchObject({ kind: "refused" });
    l.close();
  });
});
