/**
 * Test and bench helper: a terminal recording of many MiB written straight into the database, in
 * rows shaped as the recorder writes a flood (server/recordings/recorder.ts): rows of at most
 * MAX_CHUNK_BYTES, one output event per holder frame of a few KiB, a resize now and then, a notice
 * once, and multi-byte characters cut between frames and between rows. What a learner printing a
 * large file fills a recording with, without the minute of printing.
 */
import type { Db } from "../db/client";
import type { ChunkEvent } from "../recordings/recorder";
import { MAX_CHUNK_BYTES } from "../recordings/recorder";

/** Largest holder frame the filler uses, bytes (frames vary from a quarter of it to all of it). */
const FRAME_BYTES = 4096;
/** Rows inserted per statement while filling. */
const INSERT_ROWS = 16;
/** Time between two frames on the recording's clock, ms. */
const FRAME_MS = 3;

export interface FilledRow {
  offset: number;
  events: ChunkEvent[];
  data: Buffer;
}

/** Printed text: numbered lines with colours and Japanese, so the cast has escapes and UTF-8 to get right. */
function printed(bytes: number): Buffer {
  const lines: string[] = [];
  let size = 0;
  for (let i = 0; size < bytes; i++) {
    const line = `\x1b[32m${String(i).padStart(7, "0")}\x1b[0m 日本語のログ行 "quoted" \\ tab\there ${"x".repeat(i % 40)}\r\n`;
    lines.push(line);
    size += Buffer.byteLength(line);
  }
  return Buffer.from(lines.join("")).subarray(0, bytes);
}

/** The rows of a recording of `bytes` output bytes starting at `startedAt` (deterministic). */
export function recordingRows(bytes: number, startedAt: Date): FilledRow[] {
  const text = printed(bytes);
  const rows: FilledRow[] = [];
  let at = startedAt.getTime();
  let frame = 0;
  for (let offset = 0; offset < text.length;) {
    const end = Math.min(text.length, offset + MAX_CHUNK_BYTES);
    const events: ChunkEvent[] = rows.length === 0 ? [[at, "r", "120x40"]] : [];
    for (let from = offset; from < end; frame++) {
      const size = Math.min(end - from, FRAME_BYTES / 4 + ((frame * 2654435761) % ((FRAME_BYTES * 3) / 4)));
      at += FRAME_MS;
      if (frame % 997 === 500) events.push([at, "r", `${100 + (frame % 50)}x30`]);
      if (frame === 2000) events.push([at, "n", "reconnected"]);
      events.push([at, "o", size]);
      from += size;
    }
    rows.push({ offset, events, data: text.subarray(offset, end) });
    offset = end;
  }
  return rows;
}

/**
 * Writes a recording of `bytes` output bytes for `machine` of the lab session `sessionId`, as
 * the recorder would have, and returns its rows (to build the expected cast from).
 */
export async function fillRecording(
  db: Db,
  sessionId: string,
  machine: string,
  bytes: number,
  startedAt = new Date(Date.now() - 60_000),
): Promise<{ startedAt: Date; rows: FilledRow[] }> {
  const rows = recordingRows(bytes, startedAt);
  const recording = await db.terminalRecording.create({
    data: { sessionId, machine, startedAt, bootId: "fill", holderEnd: BigInt(bytes), bytes },
    select: { id: true },
  });
  for (let i = 0; i < rows.length; i += INSERT_ROWS) {
    await db.recordingChunk.createMany({
      data: rows
        .slice(i, i + INSERT_ROWS)
        .map((r) => ({ recordingId: recording.id, offset: r.offset, events: r.events, data: new Uint8Array(r.data) })),
    });
  }
  return { startedAt, rows };
}
