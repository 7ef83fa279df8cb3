/**
 * A terminal recording as asciicast v2 (https://docs.asciinema.org/manual/asciicast/v2/): a
 * header line, then one JSON array per line, `[seconds, "o", text]` for output,
 * `[seconds, "r", "COLSxROWS"]` for a resize and `[seconds, "m", label]` for a marker. Markers
 * are not stored with the output: they come from the session's progress rows (every step
 * unlock, every Check the learner pressed), placed by wall-clock time on the recording's clock.
 */
import type { Db } from "../db/client";
import type { ChunkEvent } from "./recorder";

/** Terminal size in the header when the recording saw no resize. */
const DEFAULT_SIZE = { cols: 80, rows: 24 };

export interface RecordingMarker {
  at: Date;
  kind: "step" | "check";
  stepId: string;
  /** Step title where the lab has it, else the id. */
  title: string;
  outcome?: string;
}

export type CastEvent = [number, "o" | "r" | "m", string];

export interface Cast {
  header: { version: 2; width: number; height: number; timestamp: number; title?: string };
  events: CastEvent[];
}

/** "✓ <step title>" for an unlock, "Check <step title>: pass|fail|…" for a Check run. */
export function markerLabel(m: RecordingMarker): string {
  return m.kind === "step" ? `✓ ${m.title}` : `Check ${m.title}: ${m.outcome}`;
}

/** The session's markers: step completions and manual check runs, oldest first. */
export async function sessionMarkers(db: Db, sessionId: string, titles: Map<string, string>): Promise<RecordingMarker[]> {
  const [completions, checks] = await Promise.all([
    db.stepCompletion.findMany({ where: { sessionId }, select: { stepId: true, completedAt: true } }),
    db.checkRun.findMany({ where: { sessionId, trigger: "manual" }, select: { stepId: true, createdAt: true, outcome: true } }),
  ]);
  const title = (id: string) => titles.get(id) ?? id;
  return [
    ...completions.map((c) => ({ at: c.completedAt, kind: "step" as const, stepId: c.stepId, title: title(c.stepId) })),
    ...checks.map((c) => ({ at: c.createdAt, kind: "check" as const, stepId: c.stepId, title: title(c.stepId), outcome: c.outcome })),
  ].sort((a, b) => a.at.getTime() - b.at.getTime());
}

/** Builds the cast of one recording; null when the terminal has none. */
export async function loadCast(db: Db, sessionId: string, machine: string, markers: RecordingMarker[], title?: string): Promise<Cast | null> {
  const recording = await db.terminalRecording.findUnique({
    where: { sessionId_machine: { sessionId, machine } },
    select: { startedAt: true, chunks: { orderBy: { offset: "asc" }, select: { events: true, data: true } } },
  });
  if (!recording) return null;
  return buildCast(
    recording.startedAt,
    recording.chunks.map((c) => ({ events: c.events as ChunkEvent[], data: Buffer.from(c.data) })),
    markers,
    title,
  );
}

/**
 * Output bytes are decoded as one UTF-8 stream over every chunk, so a character split between
 * two reads (or two rows) arrives whole in the later event.
 */
export function buildCast(startedAt: Date, chunks: { events: ChunkEvent[]; data: Buffer }[], markers: RecordingMarker[], title?: string): Cast {
  const t0 = startedAt.getTime();
  const decoder = new TextDecoder("utf-8");
  const terminal: CastEvent[] = [];
  let size: string | null = null;
  let current: string | null = null;
  for (const chunk of chunks) {
    let at = 0;
    for (const e of chunk.events) {
      const time = Math.max(0, e[0] - t0) / 1000;
      if (e[1] === "r") {
        // The first size is the header's; a re-attach repeats the size it had, which is no event.
        if (size === null) size = current = e[2];
        else if (e[2] !== current) terminal.push([time, "r", (current = e[2])]);
        continue;
      }
      const text = decoder.decode(chunk.data.subarray(at, at + e[2]), { stream: true });
      at += e[2];
      if (text) terminal.push([time, "o", text]);
    }
  }
  const tail = decoder.decode();
  if (tail) terminal.push([terminal.at(-1)?.[0] ?? 0, "o", tail]);

  // Output stays in byte order; its times never go back (two processes' clocks may differ a little).
  let last = 0;
  for (const e of terminal) e[0] = last = Math.max(last, round(e[0]));
  const marks: CastEvent[] = markers.map((m) => [round(Math.max(0, m.at.getTime() - t0) / 1000), "m", markerLabel(m)]);
  const events: CastEvent[] = [];
  let i = 0;
  for (const mark of marks) {
    while (i < terminal.length && terminal[i]![0] <= mark[0]) events.push(terminal[i++]!);
    events.push(mark);
  }
  events.push(...terminal.slice(i));
  const [cols, rows] = (size ?? `${DEFAULT_SIZE.cols}x${DEFAULT_SIZE.rows}`).split("x").map(Number);
  return {
    header: { version: 2, width: cols || DEFAULT_SIZE.cols, height: rows || DEFAULT_SIZE.rows, timestamp: Math.floor(t0 / 1000), ...(title ? { title } : {}) },
    events,
  };
}

function round(seconds: number): number {
  return Math.round(seconds * 1e6) / 1e6;
}

/** The asciicast v2 file: one JSON value per line. */
export function castText(cast: Cast): string {
  return [JSON.stringify(cast.header), ...cast.events.map((e) => JSON.stringify(e))].join("\n") + "\n";
}
