/**
 * The client's side of the golden frames (protocol-frames.json; the holder's side is
 * test_labdeck_holder.py): HolderLink writes the exact bytes of every frame it sends, reads every
 * frame the holder sends as its `fields`, and closes on every malformed frame sent to it. The
 * transport is an in-memory stream (the far edge).
 */
import { readFileSync } from "node:fs";
import { Duplex } from "node:stream";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { FRAME_TYPE, HOLDER_PROTOCOL, HolderLink, MAX_FRAME_BYTES, TERMINAL_ID } from "./client";

const Run = z.object({ repeat: z.string(), count: z.number().int() });
const Hex = z.union([z.string(), z.array(z.union([z.string(), Run]))]);
const Data = z.union([z.string(), z.object({ utf8: z.string() }), Run]);
const Direction = z.enum(["client->holder", "holder->client"]);
const Golden = z.object({
  limits: z.object({ protocol: z.number(), maxFrameBytes: z.number(), terminalId: z.string() }),
  kinds: z.record(z.string(), z.object({ type: z.number(), direction: Direction, body: z.enum(["json", "tagged", "tagged-writer"]) })),
  frames: z.array(
    z.object({
      name: z.string(),
      kind: z.string(),
      hex: Hex,
      fields: z.record(z.string(), z.unknown()),
      decodeOnly: z.boolean().optional(),
      note: z.string().optional(),
    }),
  ),
  refused: z.array(
    z.object({
      name: z.string(),
      direction: Direction,
      hex: Hex,
      why: z.string(),
      refusal: z.object({ closes: z.boolean(), message: z.string() }),
    }),
  ),
});
type GoldenFrame = z.infer<typeof Golden>["frames"][number];

const golden = Golden.parse(JSON.parse(readFileSync(fileURLToPath(new URL("./protocol-frames.json", import.meta.url)), "utf8")));

function bytesOf(hex: z.infer<typeof Hex>): Buffer {
  const parts = typeof hex === "string" ? [hex] : hex;
  return Buffer.concat(
    parts.map((p) => (typeof p === "string" ? Buffer.from(p, "hex") : Buffer.alloc(p.count, Buffer.from(p.repeat, "hex")))),
  );
}

function dataOf(data: z.infer<typeof Data>): Buffer {
  if (typeof data === "string") return Buffer.from(data, "hex");
  if ("utf8" in data) return Buffer.from(data.utf8, "utf8");
  return Buffer.alloc(data.count, Buffer.from(data.repeat, "hex"));
}

/** A frame's fields as the client handles them: tagged data as bytes. */
function meaning(frame: GoldenFrame): Record<string, unknown> {
  const fields = { ...frame.fields };
  if (golden.kinds[frame.kind]!.body !== "json" && "data" in fields) fields.data = dataOf(Data.parse(fields.data));
  return fields;
}

function framesFrom(direction: z.infer<typeof Direction>): GoldenFrame[] {
  return golden.frames.filter((f) => golden.kinds[f.kind]!.direction === direction);
}

const HELLO = bytesOf(golden.frames.find((f) => f.name === "hello")!.hex);

/** A link over an in-memory stream: what it writes is kept; the test pushes what the holder sends. */
async function link(hello: Buffer = HELLO): Promise<{ link: HolderLink; stream: Duplex; written: Buffer[] }> {
  const written: Buffer[] = [];
  const stream = new Duplex({
    read() {},
    write(chunk: Buffer, _encoding, done) {
      written.push(Buffer.from(chunk));
      done();
    },
  });
  const opening = HolderLink.open(stream);
  stream.push(hello);
  return { link: await opening, stream, written };
}

/** Every frame the link reads, as [kind, fields]. */
function record(link: HolderLink): [string, Record<string, unknown>][] {
  const got: [string, Record<string, unknown>][] = [];
  link.on("output", (id, offset, data) => got.push(["OUTPUT", { id, offset, data: Buffer.from(data) }]));
  link.on("ack", (id, seq) => got.push(["ACK", { id, seq }]));
  link.on("ackAs", (id, writer, seq) => got.push(["ACK_AS", { id, writer, seq }]));
  link.on("opened", (opened) => got.push(["OPENED", opened]));
  link.on("gone", (gone) => got.push(["GONE", gone]));
  link.on("exit", (exit) => got.push(["EXIT", exit]));
  link.on("holderError", (error) => got.push(["ERROR", error]));
  return got;
}

/** Turns of the event loop until `done` (a 1 MiB frame waits for the read budget's later turns). */
async function until(done: () => boolean): Promise<void> {
  for (let turn = 0; turn < 1000 && !done(); turn++) await new Promise((r) => setImmediate(r));
}

/** Sends one golden client frame through the link's own methods. */
function send(link: HolderLink, frame: GoldenFrame): void {
  const f = meaning(frame) as { id: string; [key: string]: unknown };
  const size = { cols: f.cols as number, rows: f.rows as number };
  switch (frame.kind) {
    case "OPEN":
      return link.open(f.id, f.from as number, size, f.mode as "write" | "read", { tail: f.tail as number, writer: f.writer as string });
    case "INPUT":
      return link.input(f.id, f.seq as number, f.data as Buffer);
    case "INPUT_AS":
      return link.inputAs(f.id, f.writer as string, f.seq as number, f.data as Buffer);
    case "RESIZE":
      return link.resize(f.id, size);
    case "DETACH":
      return link.detach(f.id);
    case "KILL":
      return link.kill(f.id);
    default:
      throw new Error(`the client does not send ${frame.kind}`);
  }
}

describe("golden holder frames (protocol-frames.json)", () => {
  it("agrees with the file on the protocol, the frame limit, terminal ids and frame types", () => {
    expect(HOLDER_PROTOCOL).toBe(golden.limits.protocol);
    expect(MAX_FRAME_BYTES).toBe(golden.limits.maxFrameBytes);
    expect(TERMINAL_ID.source).toBe(golden.limits.terminalId);
    expect(FRAME_TYPE).toEqual(Object.fromEntries(Object.entries(golden.kinds).map(([name, kind]) => [name, kind.type])));
    expect(new Set(golden.frames.map((f) => f.kind))).toEqual(new Set(Object.keys(golden.kinds)));
  });

  it("writes the golden bytes of every frame it sends", async () => {
    const sent = framesFrom("client->holder").filter((f) => !f.decodeOnly);
    expect(sent.length).toBeGreaterThan(10);
    const { link: l, written } = await link();
    for (const frame of sent) {
      written.length = 0;
      send(l, frame);
      const got = Buffer.concat(written);
      const want = bytesOf(frame.hex);
      expect(got.length, frame.name).toBe(want.length);
      expect(got.equals(want), `${frame.name}: ${got.subarray(0, 200).toString("hex")}`).toBe(true);
    }
    l.close();
  });

  it("reads every frame the holder sends as its fields", async () => {
    const received = framesFrom("holder->client");
    expect(received.length).toBeGreaterThan(10);
    for (const frame of received.filter((f) => f.kind === "HELLO")) {
      const { link: l } = await link(bytesOf(frame.hex));
      expect(l.hello, frame.name).toEqual(frame.fields);
      l.close();
    }
    const { link: l, stream } = await link();
    const got = record(l);
    for (const frame of received.filter((f) => f.kind !== "HELLO")) {
      got.length = 0;
      stream.push(bytesOf(frame.hex));
      await until(() => got.length > 0);
      expect(
        got.map(([kind]) => kind),
        frame.name,
      ).toEqual([frame.kind]);
      const { data, ...rest } = got[0]![1];
      const { data: want, ...wantRest } = meaning(frame);
      expect(rest, frame.name).toEqual(wantRest);
      if (want !== undefined) expect((data as Buffer).equals(want as Buffer), frame.name).toBe(true);
      else expect(data, frame.name).toBeUndefined();
    }
    expect(l.isClosed).toBe(false);
    l.close();
  });

  it("closes the link on every malformed frame the holder may send", async () => {
    const refused = golden.refused.filter((f) => f.direction === "holder->client");
    expect(refused.length).toBeGreaterThan(5);
    for (const frame of refused) {
      const bytes = bytesOf(frame.hex);
      if (bytes[4] === FRAME_TYPE.HELLO) {
        await expect(link(bytes), frame.name).rejects.toThrow(frame.refusal.message);
        continue;
      }
      const { link: l, stream } = await link();
      const got = record(l);
      let error: Error | undefined;
      l.once("close", (e) => (error = e));
      stream.push(bytes);
      await until(() => l.isClosed);
      expect(l.isClosed, `${frame.name} closes the link`).toBe(true);
      expect(error?.message.startsWith(frame.refusal.message), `${frame.name}: ${error?.message}`).toBe(true);
      expect(got, frame.name).toEqual([]); // nothing of it was taken for a frame
    }
  });
});
