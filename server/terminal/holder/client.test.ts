/**
 * The holder link's frame reader on its own: the holder's bytes, cut into chunks of every size an
 * SSH channel may hand over (1 byte, a header split in two, a frame in hundreds of pieces, many
 * frames in one chunk), give the same frames in order; a frame over the limit closes the link.
 * The transport is an in-memory stream (the far edge); the frames are built as the holder does.
 */
import { Duplex } from "node:stream";
import { expect, it } from "vitest";
import { HolderLink } from "./client";

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
  return new Duplex({ read() {}, write(_chunk, _encoding, done) { done(); } });
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
    link.on("output", (_id, at, data) => got.push([at, Buffer.from(data)]));
    for (const piece of cut(bytes, sizes)) stream.push(piece);
    await new Promise((r) => setImmediate(r));
    expect(got.map(([at]) => at), `chunks of ${sizes}`).toEqual(payloads.map((_, i) => payloads.slice(0, i).reduce((n, p) => n + p.length, 0)));
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
  for (const fields of [{ bootId: "x".repeat(10_000) }, { bootId: "b/../c" }, { instance: "" }, { instance: "a/b" }, { instance: "i".repeat(65) }]) {
    const stream = pipe();
    const opening = HolderLink.open(stream);
    stream.push(frame(0x81, Buffer.from(JSON.stringify({ protocol: 1, version: "v", bootId: "b", instance: "i", pid: 1, ...fields }))));
    await expect(opening, JSON.stringify(fields).slice(0, 40)).rejects.toThrow(/bad frame 0x81|closed/);
  }
  const stream = pipe();
  const opening = HolderLink.open(stream);
  stream.push(frame(0x81, Buffer.from(JSON.stringify({ protocol: 1, version: "v", bootId: "8f0c5e52-3b9c-4c1e-9d55-0b2f5e1a7c3d", instance: "0123456789abcdef", pid: 1 }))));
  expect((await opening).hello?.instance).toBe("0123456789abcdef");
});
