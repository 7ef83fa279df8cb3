/**
 * Terminal recordings: every terminal's output and resizes, kept in PostgreSQL as
 * chunks of raw bytes with their timing, replayed as asciicast v2 (asciicast.ts).
 *
 * The bytes come from the one stream a process reads from the machine's terminal holder
 * (holder-connector.ts hands each OUTPUT frame with its holder log offset to `output`). Several
 * processes may be attached to the same terminal (the learner's, an instructor's, the next one
 * after a restart): each buffers what it reads and, at flush, locks the recording's row, trims
 * what it read against the row's `holderEnd` and moves `holderEnd` on in the same transaction that
 * inserts the chunk. Whoever reaches an offset first writes it; the others drop those bytes. So
 * nothing is recorded twice, and after a takeover the next process continues where the holder's
 * log says the recording stopped.
 *
 * A piece that starts past the recording's end waits up to GAP_WAIT_MS for another process to
 * write the bytes before it (they may still be in its buffer). Bytes no process read (every
 * process was away, or the last one died with its buffer unwritten, while the shell went on
 * printing) are caught up from the holder's log when a process next attaches (`catchUp`): the
 * connector reads them from where the recording ends, and the terminal's live output is held back
 * meanwhile, so the recording stays in log order.
 */
import type { Db } from "../db/client";
import type { TerminalNotice } from "../terminal/protocol";
import type { LogReader, RecordingTap } from "../terminal/recording-tap";

/** How long output is buffered in the process before it is written, ms. */
export const FLUSH_INTERVAL_MS = 1_000;
/** A terminal's buffer is written early once it holds this many bytes. */
export const FLUSH_BYTES = 64 * 1024;
/** Largest chunk row, bytes (a flood is written as several). */
export const MAX_CHUNK_BYTES = 256 * 1024;
/** How often old recordings are deleted, ms. */
export const PRUNE_INTERVAL_MS = 60 * 60 * 1000;
/** Live output held while a catch-up runs, bytes; beyond, the catch-up is given up (the gap stays, logged). */
export const CATCH_UP_HOLD_BYTES = 8 * 1024 * 1024;
/** How long a write may wait for a database connection, and then for its turn on the recording's row, ms. */
const WRITE_WAIT_MS = 30_000;
/**
 * How long a piece that starts past the recording's end waits for another process to write the
 * bytes before it, ms (each process writes what it read within FLUSH_INTERVAL_MS); after that the
 * gap is taken as bytes nobody read.
 */
export const GAP_WAIT_MS = 3 * FLUSH_INTERVAL_MS;
const GAP_POLL_MS = 100;

/** Lines shown to viewers that wait for the next output byte, per terminal; beyond, the oldest go (a terminal left on the direct shell). */
export const WAITING_NOTICES = 16;

/**
 * [epochMs, "o", byteCount] | [epochMs, "r", "COLSxROWS"] | [epochMs, "n", notice]: a notice
 * (protocol.ts TerminalNotice, a line viewers were shown) stands, like a resize, before the byte
 * that follows it and has no bytes of its own.
 */
export type ChunkEvent = [number, "o", number] | [number, "r", string] | [number, "n", TerminalNotice];

interface Pending {
  bootId: string;
  /** Holder log offset of data's first byte. */
  start: number;
  data: Buffer[];
  bytes: number;
  events: ChunkEvent[];
}

export interface RecorderOptions {
  /** Output bytes per lab session (all machines) before the recording stops. */
  maxSessionBytes: number;
  /** Recordings older than this are deleted, days. */
  retentionDays: number;
  log?: { warn(obj: object, msg: string): void };
  now?: () => number;
}

/** Live output, or a notice, held while a catch-up runs. */
type Held = { bootId: string; offset: number; data: Buffer; at: number } | { notice: TerminalNotice; at: number };

interface TerminalState {
  sessionId: string;
  machine: string;
  pending: Pending | null;
  timer: NodeJS.Timeout | null;
  /** Live output held while a catch-up runs (null: none runs). */
  held: Held[] | null;
  heldBytes: number;
  /** Notices waiting for the next output byte, which they are written with. */
  notices: ChunkEvent[];
  /** Flushes of one terminal run one after the other. */
  chain: Promise<void>;
}

export class TerminalRecorder {
  private readonly terminals = new Map<string, TerminalState>();
  private pruneTimer: NodeJS.Timeout | null = null;
  private readonly now: () => number;

  constructor(
    private readonly db: Db,
    private readonly options: RecorderOptions,
  ) {
    this.now = options.now ?? Date.now;
  }

  /** The tap for one terminal (lab session × machine). */
  tap(sessionId: string, machine: string): RecordingTap {
    const state = () => this.state(sessionId, machine);
    return {
      output: (bootId, offset, data) => {
        if (data.byteLength > 0) this.output(state(), bootId, offset, data);
      },
      notice: (notice) => {
        const s = state();
        if (s.held) s.held.push({ notice, at: this.now() });
        else this.waitForByte(s, [this.now(), "n", notice]);
      },
      catchUp: (bootId, read) => this.catchUp(state(), bootId, read),
      resize: (cols, rows) => {
        const s = state();
        const q = (s.pending ??= { bootId: "", start: -1, data: [], bytes: 0, events: [] });
        q.events.push([this.now(), "r", `${cols}x${rows}`]);
        this.schedule(s, q.bytes);
      },
    };
  }

  private state(sessionId: string, machine: string): TerminalState {
    const key = `${sessionId}\u0000${machine}`;
    let s = this.terminals.get(key);
    if (!s) {
      s = { sessionId, machine, pending: null, timer: null, held: null, heldBytes: 0, notices: [], chain: Promise.resolve() };
      this.terminals.set(key, s);
    }
    return s;
  }

  private schedule(s: TerminalState, bytes: number): void {
    if (bytes >= FLUSH_BYTES) return void this.flushKey(s);
    s.timer ??= setTimeout(() => this.flushKey(s), FLUSH_INTERVAL_MS);
  }

  private waitForByte(s: TerminalState, notice: ChunkEvent): void {
    s.notices.push(notice);
    if (s.notices.length > WAITING_NOTICES) s.notices.shift();
  }

  private output(s: TerminalState, bootId: string, offset: number, data: Buffer): void {
    if (!s.held) return this.add(s, bootId, offset, Buffer.from(data), this.now());
    s.held.push({ bootId, offset, data: Buffer.from(data), at: this.now() });
    s.heldBytes += data.byteLength;
    if (s.heldBytes > CATCH_UP_HOLD_BYTES) {
      this.options.log?.warn(
        { sessionId: s.sessionId, machine: s.machine, held: s.heldBytes },
        "recording catch-up given up: live output outgrew the hold",
      );
      this.release(s);
    }
  }

  private add(s: TerminalState, bootId: string, offset: number, data: Buffer, at: number): void {
    const p = s.pending;
    // A new boot or a jump in offsets (a re-attach after a gap): write what we have first.
    if (p && p.bytes > 0 && (p.bootId !== bootId || p.start + p.bytes !== offset)) this.flushKey(s);
    const q = (s.pending ??= { bootId, start: offset, data: [], bytes: 0, events: [] });
    if (q.bytes === 0) {
      q.bootId = bootId;
      q.start = offset;
    }
    // The lines shown since the last byte go right before this one, in the same piece.
    q.events.push(...s.notices);
    s.notices = [];
    q.data.push(data);
    q.bytes += data.byteLength;
    q.events.push([at, "o", data.byteLength]);
    this.schedule(s, q.bytes);
  }

  /** Ends a hold: what was held goes on, in the order it came. */
  private release(s: TerminalState): void {
    const held = s.held ?? [];
    s.held = null;
    s.heldBytes = 0;
    for (const h of held) {
      if ("notice" in h) this.waitForByte(s, [h.at, "n", h.notice]);
      else this.add(s, h.bootId, h.offset, h.data, h.at);
    }
  }

  private catchUp(s: TerminalState, bootId: string, read: LogReader): void {
    if (s.held) return; // one at a time: the running one reads up to the log's end
    s.held = [];
    const holding = s.held;
    const at = this.now(); // the caught-up bytes show at the moment they were found
    const { sessionId, machine } = s;
    void (async () => {
      try {
        await this.flushKey(s); // what this process has is in the row first
        const row = await this.db.terminalRecording.findUnique({ where: { sessionId_machine: { sessionId, machine } } });
        if (!row || row.truncated || row.bootId !== bootId) return; // nothing of this epoch yet: nothing to catch up
        await read(Number(row.holderEnd), (offset, data) => {
          if (s.held === holding) this.add(s, bootId, offset, Buffer.from(data), at);
        });
      } catch (error) {
        this.options.log?.warn({ err: (error as Error).message, sessionId, machine }, "recording catch-up failed; the gap stays");
      } finally {
        if (s.held === holding) this.release(s);
      }
    })();
  }

  /** Writes every buffered byte (at shutdown, and in tests before reading). */
  async flushAll(): Promise<void> {
    const flushes: Promise<void>[] = [];
    for (const s of this.terminals.values()) flushes.push(this.flushKey(s));
    await Promise.all(flushes);
  }

  /** Deletes recordings older than the retention every PRUNE_INTERVAL_MS (and once now). */
  startPruning(): void {
    const prune = () =>
      void pruneRecordings(this.db, this.options.retentionDays, this.now()).catch((error: Error) =>
        this.options.log?.warn({ err: error.message }, "recording prune failed"),
      );
    prune();
    this.pruneTimer = setInterval(prune, PRUNE_INTERVAL_MS);
    this.pruneTimer.unref();
  }

  async stop(): Promise<void> {
    if (this.pruneTimer) clearInterval(this.pruneTimer);
    await this.flushAll();
  }

  private flushKey(s: TerminalState): Promise<void> {
    if (s.timer) clearTimeout(s.timer);
    s.timer = null;
    const pending = s.pending;
    s.pending = null;
    if (!pending) return s.chain;
    const { sessionId, machine } = s;
    const key = `${sessionId}\u0000${machine}`;
    const link: Promise<void> = s.chain
      .then(() => this.write(sessionId, machine, pending))
      .catch((error: Error) => this.options.log?.warn({ err: error.message, sessionId, machine }, "recording write failed"))
      .finally(() => {
        // Last write done and nothing buffered or waiting: forget the terminal (the map holds only terminals with output in flight).
        const idle = !s.pending && !s.timer && !s.held && s.notices.length === 0;
        if (s.chain === link && idle && this.terminals.get(key) === s) this.terminals.delete(key);
      });
    s.chain = link;
    return link;
  }

  private async write(sessionId: string, machine: string, pending: Pending): Promise<void> {
    const data = Buffer.concat(pending.data);
    // A flood is written as rows of at most MAX_CHUNK_BYTES, each with its events.
    let from = 0;
    do {
      const to = Math.min(data.length, from + MAX_CHUNK_BYTES);
      const events = splitEvents(pending.events, from, to, to === data.length);
      await this.writePiece(sessionId, machine, {
        bootId: pending.bootId,
        start: pending.start + from,
        bytes: data.subarray(from, to),
        events,
      });
      from = to;
    } while (from < data.length);
  }

  private async writePiece(sessionId: string, machine: string, piece: Piece): Promise<void> {
    const recording = await this.recording(sessionId, machine, piece);
    if (!recording) return;
    const gapDeadline = Date.now() + GAP_WAIT_MS; // real time, whatever clock the events use
    while ((await this.writeInTurn(sessionId, recording.id, piece, Date.now() >= gapDeadline)) === "gap") {
      await new Promise((resolve) => setTimeout(resolve, GAP_POLL_MS));
    }
  }

  /** One try at writing a piece; "gap": it starts past the recording's end and `acceptGap` is false. */
  private async writeInTurn(sessionId: string, recordingId: string, piece: Piece, acceptGap: boolean): Promise<"gap" | void> {
    // The writers of one terminal (several processes) take turns on its row: each trims against
    // the holderEnd the one before it left. A bounded retry of a conditional update instead lost
    // chunks when three processes flushed at once on a loaded machine.
    return this.db.$transaction(
      async (tx) => {
        await tx.$queryRaw`SELECT 1 FROM "TerminalRecording" WHERE "id" = ${recordingId} FOR UPDATE`;
        const row = await tx.terminalRecording.findUnique({ where: { id: recordingId } });
        if (!row || row.truncated) return;
        const trimmed = trimPiece(piece, row);
        if (!trimmed) return;
        // Another process may still hold the bytes before this piece in its buffer.
        if (trimmed.gap && !acceptGap) return "gap";
        let { bytes, events } = trimmed;
        const used = await tx.terminalRecording.aggregate({ where: { sessionId }, _sum: { bytes: true } });
        const room = this.options.maxSessionBytes - (used._sum.bytes ?? 0);
        const truncated = bytes.length > room;
        if (truncated) {
          events = splitEvents(events, 0, Math.max(0, room), false);
          bytes = bytes.subarray(0, Math.max(0, room));
        }
        const holderEnd = bytes.length > 0 ? trimmed.first + BigInt(bytes.length) : trimmed.holderEnd;
        await tx.terminalRecording.update({
          where: { id: row.id },
          data: { bootId: trimmed.bootId, holderEnd, bytes: { increment: bytes.length }, truncated },
        });
        await tx.recordingChunk.create({ data: { recordingId: row.id, offset: row.bytes, events, data: new Uint8Array(bytes) } });
      },
      { maxWait: WRITE_WAIT_MS, timeout: WRITE_WAIT_MS },
    );
  }

  /** The recording row, made on first output (its time zero is then). */
  private async recording(sessionId: string, machine: string, piece: Piece) {
    const where = { sessionId_machine: { sessionId, machine } };
    const existing = await this.db.terminalRecording.findUnique({ where });
    if (existing) return existing;
    if (piece.bytes.length === 0) return null; // resizes before any output: the header carries the size
    const first = piece.events[0]?.[0] ?? this.now();
    try {
      return await this.db.terminalRecording.create({
        data: { sessionId, machine, startedAt: new Date(first), bootId: piece.bootId, holderEnd: BigInt(piece.start) },
      });
    } catch (error) {
      // Another process made it meanwhile (unique), or the session is gone (foreign key).
      const again = await this.db.terminalRecording.findUnique({ where });
      if (again) return again;
      if ((error as { code?: string }).code === "P2003") return null;
      throw error;
    }
  }
}

/** Bytes read from a holder log, with their events, to be written as one chunk row. */
type Piece = { bootId: string; start: number; bytes: Buffer; events: ChunkEvent[] };

/**
 * A piece trimmed against what the recording already holds: the bytes another process wrote
 * first are dropped (and their events). Null when nothing is left to write. `first`: the holder
 * offset of the first byte left; `gap`: the piece starts past the recording's end (same boot).
 */
export function trimPiece(
  piece: Piece,
  row: { bootId: string; holderEnd: bigint },
): { bytes: Buffer; events: ChunkEvent[]; bootId: string; holderEnd: bigint; first: bigint; gap: boolean } | null {
  let { bytes, events } = piece;
  let { holderEnd, bootId } = row;
  let first = BigInt(piece.start);
  let gap = false;
  if (bytes.length > 0) {
    if (piece.bootId !== row.bootId) {
      // The machine rebooted: its holder's log starts again at 0 under a new boot id.
      bootId = piece.bootId;
      holderEnd = BigInt(piece.start);
    }
    const skip = Number(holderEnd - BigInt(piece.start));
    if (skip >= bytes.length) {
      // Every byte is already recorded by another process; keep only resizes, if any (a notice
      // went with the byte after it, which that process wrote with the lines it showed there).
      events = events.filter((e) => e[1] === "r");
      bytes = Buffer.alloc(0);
    } else if (skip > 0) {
      events = splitEvents(events, skip, bytes.length, true);
      bytes = bytes.subarray(skip);
      first = holderEnd;
    }
    // skip < 0: a gap. Another process may still hold those bytes (writePiece waits for it), or
    // nobody read them (every process was away longer than the holder's repaint tail): then the
    // recording continues from here.
    gap = skip < 0;
  }
  if (bytes.length === 0 && events.length === 0) return null;
  return { bytes, events, bootId, holderEnd, first, gap };
}

/**
 * The events that cover bytes [from, to) of a buffer the events split, with the first and last
 * "o" cut to fit; a resize or a notice goes with the output that follows it (`trailing`: also one
 * after the last byte).
 */
export function splitEvents(events: ChunkEvent[], from: number, to: number, trailing: boolean): ChunkEvent[] {
  const out: ChunkEvent[] = [];
  let at = 0;
  for (const e of events) {
    if (e[1] !== "o") {
      if (at >= from && (at < to || (trailing && at === to))) out.push(e);
      continue;
    }
    const start = at;
    const end = at + e[2];
    at = end;
    const lo = Math.max(start, from);
    const hi = Math.min(end, to);
    if (hi > lo) out.push([e[0], "o", hi - lo]);
  }
  return out;
}

/** Deletes recordings that started more than `retentionDays` ago (chunks go with them). */
export async function pruneRecordings(db: Db, retentionDays: number, now = Date.now()): Promise<number> {
  const before = new Date(now - retentionDays * 24 * 60 * 60 * 1000);
  const { count } = await db.terminalRecording.deleteMany({ where: { startedAt: { lt: before } } });
  return count;
}
