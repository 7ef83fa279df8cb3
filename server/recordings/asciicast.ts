/**
 * A terminal recording as asciicast v2 (https://docs.asciinema.org/manual/asciicast/v2/): a
 * header line, then one JSON array per line, `[seconds, "o", text]` for output,
 * `[seconds, "r", "COLSxROWS"]` for a resize and `[seconds, "m", label]` for a marker. Step
 * markers are not stored with the output: they come from the session's progress rows (every step
 * unlock, every Check the learner pressed), placed by wall-clock time on the recording's clock.
 * A notice the viewers were shown (rebooted, reconnected, …) is stored at its place in the output
 * and replayed as the same line, in the platform's language, followed by a marker labelled with
 * the notice's key (TerminalNotice), which the replay page leaves out of its list of steps.
 */
import type { Db } from "../db/client";
import { terminalNoticeText } from "../i18n/locale";
import { DEFAULT_LOCALE } from "../i18n/locales";
import { TerminalNotice } from "../terminal/protocol";
import { terminalMachine } from "../terminal/tab-names";
import type { ChunkEvent } from "./recorder";

/** Terminal size in the header when the recording saw no resize. */
const DEFAULT_SIZE = { cols: 80, rows: 24 };

export interface RecordingMarker {
  at: Date;
  /** step: passed; check: a Check run; task: an exam's learner moved to that task. */
  kind: "step" | "check" | "task";
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

/** "✓ <step title>" for an unlock, "Check <step title>: pass|fail|…" for a Check run, "→ <task title>" for an exam's task switch. */
export function markerLabel(m: RecordingMarker): string {
  if (m.kind === "task") return `→ ${m.title}`;
  return m.kind === "step" ? `✓ ${m.title}` : `Check ${m.title}: ${m.outcome}`;
}

/** The session's markers: step completions, manual check runs and an exam's task switches, oldest first. */
export async function sessionMarkers(db: Db, sessionId: string, titles: Map<string, string>): Promise<RecordingMarker[]> {
  const [completions, checks, switches] = await Promise.all([
    db.stepCompletion.findMany({ where: { sessionId }, select: { stepId: true, completedAt: true } }),
    db.checkRun.findMany({ where: { sessionId, trigger: "manual" }, select: { stepId: true, createdAt: true, outcome: true } }),
    db.examTaskSwitch.findMany({ where: { attempt: { sessionId } }, select: { taskId: true, at: true } }),
  ]);
  const title = (id: string) => titles.get(id) ?? id;
  return [
    ...completions.map((c) => ({ at: c.completedAt, kind: "step" as const, stepId: c.stepId, title: title(c.stepId) })),
    ...checks.map((c) => ({ at: c.createdAt, kind: "check" as const, stepId: c.stepId, title: title(c.stepId), outcome: c.outcome })),
    ...switches.map((s) => ({ at: s.at, kind: "task" as const, stepId: s.taskId, title: title(s.taskId) })),
  ].sort((a, b) => a.at.getTime() - b.at.getTime());
}

/**
 * Recording rows read per database query while a cast streams: each row is at most
 * MAX_CHUNK_BYTES (256 KiB), so a page is at most 2 MiB of bytes (and their base64 text).
 */
export const CAST_PAGE_ROWS = 8;

type Chunk = { events: ChunkEvent[]; data: Buffer };

/** A recording row as the page query returns it: the bytes as base64 text, the events as JSON text. */
type RawRow = { id: bigint; offset: number; events: string; data: string };

/**
 * One page of a recording's rows after (offset, id), in the order they were written: a row of
 * resizes only has no bytes, so the row after it has the same offset; paged by offset alone, that
 * row was skipped when it began a page. A raw query with the bytes as base64 text: through the
 * model, the driver adapter turns every byte into an element of a JS array (a 256 KiB row is an
 * array of 262,144 numbers), which blocked the event loop for about a second per page of 16 rows.
 */
function chunkPage(db: Db, recordingId: string, after: { offset: number; id: bigint }): Promise<RawRow[]> {
  return db.$queryRaw<RawRow[]>`
    SELECT "id", "offset", "events"::text AS "events", encode("data", 'base64') AS "data"
    FROM "RecordingChunk"
    WHERE "recordingId" = ${recordingId} AND ("offset", "id") > (${after.offset}::int, ${after.id}::bigint)
    ORDER BY "offset", "id"
    LIMIT ${CAST_PAGE_ROWS}`;
}

function chunkOf(row: RawRow): Chunk {
  // PostgreSQL's base64 breaks lines every 76 characters; Buffer.from skips the line breaks.
  return { events: JSON.parse(row.events) as ChunkEvent[], data: Buffer.from(row.data, "base64") };
}

/**
 * The asciicast file of one recording, one line at a time, read from the database a page of rows at a time:
 * a recording of up to the per-session limit (64 MiB) is never held in memory whole, by the
 * server or by the page's player fetching it. Null when the terminal has no recording.
 */
export async function castLines(
  db: Db,
  sessionId: string,
  machine: string,
  markers: RecordingMarker[],
  title?: string,
): Promise<AsyncGenerator<string> | null> {
  const recording = await db.terminalRecording.findUnique({
    where: { sessionId_machine: { sessionId, machine } },
    select: { id: true, startedAt: true },
  });
  if (!recording) return null;
  const recordingId = recording.id;
  const firstRows = await chunkPage(db, recordingId, { offset: -1, id: 0n });
  const cursorAfter = (page: RawRow[]) => (page.length === CAST_PAGE_ROWS ? { offset: page.at(-1)!.offset, id: page.at(-1)!.id } : null);
  const size = firstSize(firstRows.map((row) => ({ events: JSON.parse(row.events) as ChunkEvent[] })));
  async function* rows(): AsyncGenerator<Chunk> {
    let page = firstRows;
    for (;;) {
      const cursor = cursorAfter(page);
      // Decoded one row at a time as the cast needs it, and let go of as it goes.
      for (let row = page.shift(); row; row = page.shift()) yield chunkOf(row);
      if (!cursor) return;
      page = await chunkPage(db, recordingId, cursor);
    }
  }
  return castStream(recording.startedAt, size, rows(), markers, title, machine);
}

/** Builds the cast of one recording in memory (tests, benches); null when the terminal has none. */
export async function loadCast(
  db: Db,
  sessionId: string,
  machine: string,
  markers: RecordingMarker[],
  title?: string,
): Promise<Cast | null> {
  const lines = await castLines(db, sessionId, machine, markers, title);
  if (!lines) return null;
  let text = "";
  for await (const piece of lines) text += piece;
  const [header, ...events] = text.trimEnd().split("\n");
  return { header: JSON.parse(header!) as Cast["header"], events: events.map((line) => JSON.parse(line) as CastEvent) };
}

/**
 * Output bytes are decoded as one UTF-8 stream over every chunk, so a character split between
 * two reads (or two rows) arrives whole in the later event. `machine`: the terminal's name, which
 * notices name.
 */
export function buildCast(startedAt: Date, chunks: Chunk[], markers: RecordingMarker[], title?: string, machine = ""): Cast {
  const writer = new CastWriter(startedAt, firstSize(chunks), markers, title, machine);
  const events = [...chunks.flatMap((chunk) => [...writer.push(chunk)]), ...writer.end()];
  return { header: writer.header, events };
}

/** The header's size: the first resize among `chunks` (the attach's), as "COLSxROWS". */
function firstSize(chunks: { events: ChunkEvent[] }[]): string | null {
  for (const chunk of chunks) for (const e of chunk.events) if (e[1] === "r") return e[2];
  return null;
}

async function* castStream(
  startedAt: Date,
  size: string | null,
  chunks: AsyncIterable<Chunk>,
  markers: RecordingMarker[],
  title: string | undefined,
  machine: string,
): AsyncGenerator<string> {
  const writer = new CastWriter(startedAt, size, markers, title, machine);
  yield JSON.stringify(writer.header) + "\n";
  // A line per event, made when it is asked for: one row's text is never a single string.
  for await (const chunk of chunks) for (const event of writer.push(chunk)) yield JSON.stringify(event) + "\n";
  for (const event of writer.end()) yield JSON.stringify(event) + "\n";
}

/**
 * Turns recording rows, in offset order, into cast events as they come: output in byte order with
 * times that never go back (two processes' clocks may differ a little), resizes when the size
 * changes, notices as their line and a marker, and each step marker before the first output after
 * its time.
 */
class CastWriter {
  readonly header: Cast["header"];
  private readonly t0: number;
  private readonly decoder = new TextDecoder("utf-8");
  private readonly marks: CastEvent[];
  private nextMark = 0;
  /** The size now (null before the first resize; the header's then is the one it will be). */
  private current: string | null = null;
  private last = 0;

  constructor(
    startedAt: Date,
    private readonly headerSize: string | null,
    markers: RecordingMarker[],
    title: string | undefined,
    private readonly machine: string,
  ) {
    this.t0 = startedAt.getTime();
    const [cols, rows] = (headerSize ?? `${DEFAULT_SIZE.cols}x${DEFAULT_SIZE.rows}`).split("x").map(Number);
    this.header = {
      version: 2,
      width: cols || DEFAULT_SIZE.cols,
      height: rows || DEFAULT_SIZE.rows,
      timestamp: Math.floor(this.t0 / 1000),
      ...(title ? { title } : {}),
    };
    this.marks = markers.map((m) => [round(Math.max(0, m.at.getTime() - this.t0) / 1000), "m", markerLabel(m)]);
  }

  /** The events of one row, made one stored event at a time (with the markers due before it). */
  *push(chunk: Chunk): Generator<CastEvent> {
    let at = 0;
    for (const e of chunk.events) {
      yield* this.event(chunk.data.subarray(at, e[1] === "o" ? at + e[2] : at), e);
      if (e[1] === "o") at += e[2];
    }
  }

  /** The cast events of one stored event; `bytes`: its output bytes (none for a resize or notice). */
  private event(bytes: Buffer, e: ChunkEvent): CastEvent[] {
    const out: CastEvent[] = [];
    const time = Math.max(0, e[0] - this.t0) / 1000;
    if (e[1] === "r") {
      // The first size is the header's; a re-attach repeats the size it had, which is no event.
      const was = this.current ?? this.headerSize ?? `${DEFAULT_SIZE.cols}x${DEFAULT_SIZE.rows}`;
      this.current = e[2];
      if (e[2] !== was) this.emit(out, [time, "r", e[2]]);
    } else if (e[1] === "n") {
      this.notice(out, time, e[2]);
    } else {
      const text = this.decoder.decode(bytes, { stream: true });
      if (text) this.emit(out, [time, "o", text]);
    }
    return out;
  }

  /**
   * The line the viewers were shown, framed by line breaks as on their screens (so the prompts
   * before and after it do not run together), then a marker named by the notice's key. A key this
   * version does not know (a newer process wrote it) is left out.
   */
  private notice(out: CastEvent[], time: number, key: string): void {
    const notice = TerminalNotice.safeParse(key);
    if (!notice.success) return;
    this.emit(out, [time, "o", terminalNoticeText(DEFAULT_LOCALE, notice.data, terminalMachine(this.machine))]);
    this.emit(out, [time, "m", notice.data]);
  }

  /** What is left: a character the last row cut short, and markers after the last output. */
  end(): CastEvent[] {
    const out: CastEvent[] = [];
    const tail = this.decoder.decode();
    if (tail) this.emit(out, [this.last, "o", tail]);
    out.push(...this.marks.slice(this.nextMark));
    this.nextMark = this.marks.length;
    return out;
  }

  private emit(out: CastEvent[], event: CastEvent): void {
    event[0] = this.last = Math.max(this.last, round(event[0]));
    while (this.nextMark < this.marks.length && this.marks[this.nextMark]![0] < event[0]) out.push(this.marks[this.nextMark++]!);
    out.push(event);
  }
}

function round(seconds: number): number {
  return Math.round(seconds * 1e6) / 1e6;
}

/** The asciicast v2 file: one JSON value per line. */
export function castText(cast: Cast): string {
  return [JSON.stringify(cast.header), ...cast.events.map((e) => JSON.stringify(e))].join("\n") + "\n";
}
