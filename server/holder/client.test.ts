/**
 * The holder link's frame reader on its own: the holder's bytes, cut into chunks of every size an
 * SSH channel may hand over (1 byte, a header split in two, a frame in hundreds of pieces, many
 * frames in one chunk), give the same frames in order; a frame over the limit closes the link.
 * The transport is an in-memory stream (the far edge); the frames are built as the holder does.
 */
import { Duplex } from "node:stream";
import { expect, it } from "vitest";
import { HolderLink } from "./client";
import { ReadBudget, TURN_READ_BYTES } from "../ssh/read-budget";

function frame(type: number, body: Buffer): Buffer {
  const head = Buffer.alloc(5);
  head.writeUInt32BE(body.length + 1, 0);
  head[4] = type;
  return Buffer.concat([head, body]);
}

function output(id: string, offset: number, data: Buffer): Buffer {
  const number = Buffer.alloc(8);
  number.writeBigUInt64BE(BigInt(offset));
  return frame(0x83, Buffer.concat([Buffer.from([id.length]), Buffer.from(id), number, data]));
}

const HELLO = frame(0x81, Buffer.from(JSON.stringify({ protocol: 1, version: "v", bootId: "b", instance: "i", pid: 1 })));

/** A stream whose readable side is fed by the test. */
function pipe(): Duplex {
  return new Duplex({
    read() {},
    write(_chunk, _encoding, done) {
      done();
    },
  });
}

/** Cuts `bytes` into pieces of the given sizes, repeated; the rest in one. */
function cut(bytes: Buffer, sizes: number[]): Buffer[] {
  const pieces: Buffer[] = [];
  for (let at = 0, i = 0; at < bytes.length; i++) {
    const n = sizes[i % sizes.length]!;
    pieces.push(bytes.subarray(at, at + n));
    at += n;
  }
  return pieces;
}

it("reads the same frames, in order, whatever chunks the bytes arrive in", async () => {
  const payloads = [Buffer.alloc(0), Buffer.from("a"), Buffer.alloc(64 * 1024, "y"), Buffer.alloc(300_000, "z"), Buffer.from("end")];
  const frames: Buffer[] = [];
  let offset = 0;
  for (const data of payloads) {
    frames.push(output("t1", offset, data));
    offset += data.length;
  }
  const bytes = Buffer.concat(frames);
  for (const sizes of [[1], [3, 2], [7], [1000], [4, 65_536], [bytes.length]]) {
    const stream = pipe();
    const opening = HolderLink.open(stream);
    for (const piece of cut(HELLO, [2, 3])) stream.push(piece);
    const link = await opening;
    const got: [number, Buffer][] = [];
    link.on("output", (_id, offset, data) => got.push([offset, Buffer.from(data)]));
    for (const piece of cut(bytes, sizes)) stream.push(piece);
    for (let turn = 0; turn < 100 && got.length < payloads.length; turn++) await new Promise((r) => setImmediate(r));
    expect(
      got.map(([offset]) => offset),
      `chunks of ${sizes}`,
    ).toEqual(payloads.map((_, i) => payloads.slice(0, i).reduce((n, p) => n + p.length, 0)));
    expect(Buffer.concat(got.map(([, data]) => data)).equals(Buffer.concat(payloads)), `chunks of ${sizes}`).toBe(true);
    link.close();
  }
});

it("closes the link on a frame longer than the limit, before its body arrives", async () => {
  const stream = pipe();
  const opening = HolderLink.open(stream);
  stream.push(HELLO);
  const link = await opening;
  const closed = new Promise<Error | undefined>((resolve) => link.once("close", resolve));
  const head = Buffer.alloc(5);
  head.writeUInt32BE(64 * 1024 * 1024, 0);
  head[4] = 0x83;
  stream.push(head.subarray(0, 3));
  stream.push(Buffer.concat([head.subarray(3), Buffer.alloc(10)]));
  expect((await closed)?.message).toMatch(/frame of 67108864 bytes/);
  expect(link.isClosed).toBe(true);
});

it("refuses a HELLO whose boot id or instance is not one a holder makes (a learner's own holder naming epochs of any size)", async () => {
  for (const fields of [
    { bootId: "x".repeat(10_000) },
    { bootId: "b/../c" },
    { instance: "" },
    { instance: "a/b" },
    { instance: "i".repeat(65) },
  ]) {
    const stream = pipe();
    const opening = HolderLink.open(stream);
    stream.push(frame(0x81, Buffer.from(JSON.stringify({ protocol: 1, version: "v", bootId: "b", instance: "i", pid: 1, ...fields }))));
    await expect(opening, JSON.stringify(fields).slice(0, 40)).rejects.toThrow(/bad frame 0x81|closed/);
  }
  const stream = pipe();
  const opening = HolderLink.open(stream);
  stream.push(
    frame(
      0x81,
      Buffer.from(
        JSON.stringify({ protocol: 1, version: "v", bootId: "8f0c5e52-3b9c-4c1e-9d55-0b2f5e1a7c3d", instance: "0123456789abcdef", pid: 1 }),
      ),
    ),
  );
  expect((await opening).hello?.instance).toBe("0123456789abcdef");
});

/** Output frames read per turn of the event loop (setImmediate ticks) until `count` have come. */
async function outputsPerTurn(link: HolderLink, count: number, feed: () => void): Promise<{ perTurn: number[]; offsets: number[] }> {
  const perTurn: number[] = [0];
  const offsets: number[] = [];
  link.on("output", (_id, offset) => {
    offsets.push(offset);
    perTurn[perTurn.length - 1]!++;
  });
  // A new turn starts at this tick, scheduled before any of the link's (each turn runs it first).
  let done!: () => void;
  const finished = new Promise<void>((r) => (done = r));
  const tick = () => {
    if (offsets.length >= count || perTurn.length > 1000) return done();
    perTurn.push(0);
    setImmediate(tick);
  };
  setImmediate(tick);
  feed(); // a flowing stream hands over what is pushed at once, until it pauses
  await finished;
  return { perTurn, offsets };
}

it("takes at most the read budget from its holder per turn of the event loop: a resumed flood does not hold the process", async () => {
  const stream = pipe();
  const opening = HolderLink.open(stream, undefined, new ReadBudget());
  stream.push(HELLO);
  const link = await opening;
  await new Promise((r) => setImmediate(r)); // the turn that read the HELLO is over
  const size = 16 * 1024;
  const frames = 64; // 1 MiB buffered in the channel, as after a resume
  const { perTurn, offsets } = await outputsPerTurn(link, frames, () => {
    for (let i = 0; i < frames; i++) stream.push(output("t1", i * size, Buffer.alloc(size, "y")));
  });
  expect(offsets).toEqual(Array.from({ length: frames }, (_, i) => i * size)); // every frame, in order
  // Alone, the link has the turn's budget (a quantum at a time), and the frame that crosses it.
  expect(Math.max(...perTurn)).toBeLessThanOrEqual(Math.ceil(TURN_READ_BYTES / size) + 1);
  expect(perTurn.filter((n) => n > 0).length).toBeGreaterThanOrEqual(Math.floor((frames * size) / TURN_READ_BYTES)); // spread over turns
  link.close();
});

it("stays paused by flow control across its own yields, and reads on when resumed", async () => {
  const stream = pipe();
  const opening = HolderLink.open(stream, undefined, new ReadBudget());
  stream.push(HELLO);
  const link = await opening;
  const size = 16 * 1024;
  let got = 0;
  link.on("output", () => {
    if (++got === 2) link.pause(); // the viewers are backed up
  });
  for (let i = 0; i < 40; i++) stream.push(output("t1", i * size, Buffer.alloc(size, "y")));
  for (let turn = 0; turn < 20; turn++) await new Promise((r) => setImmediate(r));
  expect(got).toBe(2);
  link.resume();
  for (let turn = 0; turn < 200 && got < 40; turn++) await new Promise((r) => setImmediate(r));
  expect(got).toBe(40);
  link.close();
});
