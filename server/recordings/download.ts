/**
 * One terminal recording served as an asciicast download at a bounded cost, however long it is
 * (up to the per-session limit, 64 MiB of output): the rows come from the database a page at a
 * time (asciicast.ts), the text goes out in slices of CAST_SLICE_BYTES, one slice per event-loop
 * turn, and the next slice is made only when the response has taken the last one (a pull stream:
 * Next.js writes it to the socket and waits for 'drain'). So a download neither holds a recording
 * in memory nor keeps the other terminals of the process waiting, and each user may run only
 * MAX_STREAMS_PER_USER.recording of them at once.
 */
import { setImmediate as nextTurn } from "node:timers/promises";
import type { Db } from "../db/client";
import { Denied } from "../denied";
import { apiError } from "../http/route";
import { streamSlot } from "../http/streams";
import { castLines, type RecordingMarker } from "./asciicast";

/** Cast text handed to the response per event-loop turn, bytes (a longer line is cut into several). */
export const CAST_SLICE_BYTES = 16 * 1024;

export interface CastRequest {
  sessionId: string;
  /** The terminal's name: `node01`, `node01#2`. */
  machine: string;
  markers: RecordingMarker[];
  title?: string;
}

/**
 * The download of one recording for `userId`, whose access the caller has decided: 429
 * tooManyRecordingStreams when the user has their cap of downloads running in this process, 404
 * (Denied) when the terminal has no recording. The slot is given back when the body ends, fails,
 * is cancelled, or the client goes away.
 */
export async function castResponse(db: Db, request: Request, userId: string, cast: CastRequest): Promise<Response> {
  const release = streamSlot(request, userId, "recording");
  if (!release) return apiError(request, 429, "tooManyRecordingStreams");
  let lines: AsyncGenerator<string> | null;
  try {
    lines = await castLines(db, cast.sessionId, cast.machine, cast.markers, cast.title);
  } catch (error) {
    release();
    throw error;
  }
  if (!lines) {
    release();
    throw new Denied(404, "noSuchRecording");
  }
  return new Response(castBody(lines, release), {
    headers: { "content-type": "application/x-asciicast; charset=utf-8", "cache-control": "private, no-store" },
  });
}

/**
 * `lines` as a byte stream of CAST_SLICE_BYTES slices, one per pull, each pull ending a turn later
 * (setImmediate): what one slice costs is the work of one turn. `release` runs once the stream
 * is done for any reason.
 */
export function castBody(lines: AsyncGenerator<string>, release: () => void): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder();
  /** Encoded text not handed on yet (less than a slice, or the rest of a long line). */
  let pending: Uint8Array<ArrayBuffer> = new Uint8Array(0);
  let done = false;
  const nextSlice = async (): Promise<Uint8Array<ArrayBuffer> | null> => {
    let text = "";
    // A string's length never exceeds its UTF-8 size, so this stops within one line of a slice.
    while (!done && pending.length + text.length < CAST_SLICE_BYTES) {
      const next = await lines.next();
      if (next.done) done = true;
      else text += next.value;
    }
    if (text) pending = joined(pending, encoder.encode(text));
    if (pending.length === 0) return null;
    const slice = pending.subarray(0, CAST_SLICE_BYTES);
    pending = pending.subarray(CAST_SLICE_BYTES);
    return slice;
  };
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        const slice = await nextSlice();
        if (!slice) {
          release();
          controller.close();
          return;
        }
        controller.enqueue(slice);
        await nextTurn();
      } catch (error) {
        release();
        controller.error(error);
      }
    },
    async cancel() {
      release();
      await lines.return(undefined);
    },
  });
}

function joined(a: Uint8Array<ArrayBuffer>, b: Uint8Array<ArrayBuffer>): Uint8Array<ArrayBuffer> {
  if (a.length === 0) return b;
  const out = new Uint8Array(a.length + b.length);
  out.set(a);
  out.set(b, a.length);
  return out;
}
