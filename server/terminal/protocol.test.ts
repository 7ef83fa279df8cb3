import { describe, expect, it } from "vitest";
import {
  ClientMessage,
  decodeOutput,
  encodeOutput,
  encodeOutputChunks,
  OUTPUT_HEADER_BYTES,
  parseClientMessage,
  parseServerMessage,
} from "./protocol";

describe("terminal protocol", () => {
  it("round-trips output frames, multi-byte text and large offsets intact", () => {
    const text = Buffer.from("こんにちは\r\n");
    for (const offset of [0, 1, 2 ** 32 + 5, Number.MAX_SAFE_INTEGER - text.length]) {
      const frame = encodeOutput(offset, text);
      expect(frame.byteLength).toBe(OUTPUT_HEADER_BYTES + text.length);
      const decoded = decodeOutput(frame)!;
      expect(decoded.offset).toBe(offset);
      expect(Buffer.from(decoded.data).toString("utf8")).toBe("こんにちは\r\n");
    }
  });

  it("frames several contiguous chunks exactly as the one joined chunk", () => {
    const chunks = [Buffer.from("こん"), Buffer.alloc(0), Buffer.from("にちは\r\n"), Buffer.alloc(70_000, "y")];
    const bytes = chunks.reduce((n, c) => n + c.length, 0);
    for (const offset of [0, 2 ** 40 + 3]) {
      expect(Buffer.from(encodeOutputChunks(offset, chunks, bytes)).equals(Buffer.from(encodeOutput(offset, Buffer.concat(chunks))))).toBe(
        true,
      );
      expect(
        Buffer.from(encodeOutputChunks(offset, [chunks[2]!], chunks[2]!.length)).equals(Buffer.from(encodeOutput(offset, chunks[2]!))),
      ).toBe(true);
    }
  });

  it("parses the size message read-only viewers get, within the resize bounds", () => {
    expect(parseServerMessage(JSON.stringify({ type: "size", cols: 132, rows: 40 }))).toEqual({ type: "size", cols: 132, rows: 40 });
    expect(parseServerMessage(JSON.stringify({ type: "size", cols: 0, rows: 40 }))).toBeNull();
    expect(parseServerMessage(JSON.stringify({ type: "size", cols: 80 }))).toBeNull();
  });

  it("decodes a frame that sits inside a larger buffer", () => {
    const frame = encodeOutput(7, Buffer.from("abc"));
    const padded = Buffer.concat([Buffer.from("zz"), frame]).subarray(2);
    expect(decodeOutput(padded)).toMatchObject({ offset: 7 });
  });

  it("rejects short, unknown-kind and negative-offset frames", () => {
    expect(decodeOutput(new Uint8Array(3))).toBeNull();
    const unknown = encodeOutput(0, Buffer.from("x"));
    unknown[0] = 9;
    expect(decodeOutput(unknown)).toBeNull();
    const negative = encodeOutput(0, Buffer.from("x"));
    new DataView(negative.buffer, negative.byteOffset).setFloat64(1, -1);
    expect(decodeOutput(negative)).toBeNull();
  });

  it.each([
    ["not json", "{"],
    ["unknown type", JSON.stringify({ type: "exec" })],
    ["hello without token", JSON.stringify({ type: "hello", offset: 0, cols: 80, rows: 24 })],
    ["fractional offset", JSON.stringify({ type: "hello", token: "t", offset: 1.5, cols: 80, rows: 24 })],
    ["too many rows", JSON.stringify({ type: "resize", cols: 80, rows: 100000 })],
    ["empty input", JSON.stringify({ type: "input", data: "" })],
  ])("refuses %s", (_name, text) => {
    expect(parseClientMessage(text).success).toBe(false);
  });

  it("accepts a well-formed hello", () => {
    const m = parseClientMessage(JSON.stringify({ type: "hello", token: "t", offset: 0, cols: 80, rows: 24 }));
    expect(m.success && (m.data as ClientMessage).type).toBe("hello");
  });
});
