/**
 * A terminal's current screen, kept by a headless xterm.js fed with every output byte the
 * Terminal (terminal.ts) sees, so a viewer whose offset is no longer held gets the screen as it is
 * (serialized by @xterm/addon-serialize: cells, colours, cursor, modes) instead of a blank reset.
 * Memory is bounded by the size and SCREEN_SCROLLBACK_LINES (measured: bench/screen.ts).
 */
import serializePkg from "@xterm/addon-serialize";
import headlessPkg from "@xterm/headless";
import type { PtySize } from "./pty";

// Both packages are CommonJS: Node's ESM loader sees only their default export.
const { Terminal: HeadlessTerminal } = headlessPkg;
const { SerializeAddon } = serializePkg;

/** Scrollback lines the headless terminal keeps (and a snapshot carries) above the screen. */
export const SCREEN_SCROLLBACK_LINES = 500;

/**
 * Bytes written to the headless terminal but not yet parsed beyond which it is no longer fed
 * (a flood parses slower than it arrives; xterm would queue it all): the screen is then
 * rebuilt from the replay buffer when a snapshot is asked for.
 */
export const SCREEN_BACKLOG_BYTES = 1024 * 1024;

/**
 * What a screen parses as it comes: a token bucket of this many bytes per second, and this many
 * at once (bytes of parse cost: a line feed counts SCREEN_LINE_FEED_COST more). Output beyond (a flood: `yes`, a big `cat`) is not parsed; the screen is stale and is
 * rebuilt from the replay buffer when a snapshot is asked for (rare: a viewer whose offset is no
 * longer held). Typing, apt-get or `watch` (a few KiB/s) stay parsed as they come. Before this,
 * the process parsed every watched flood in full, in xterm's 12 ms slices on its event loop: with
 * 20 watched `yes` a keystroke's echo waited behind them (bench/typing-under-load.ts).
 */
export const SCREEN_PARSE_BYTES_PER_S = 64 * 1024;
export const SCREEN_PARSE_BURST_BYTES = 256 * 1024;
/**
 * And for the whole process, what screens that are flooding (past SCREEN_PARSE_FREE_BYTES) may
 * parse together: 20 watched `yes` each within its own budget still parsed 1.25 MiB/s of line
 * feeds (the headless terminal's scroll), and their 20 full bursts at once held the event loop
 * 2 s when they started, every echo waiting (bench/typing-under-load.ts, loop delay p99 100-500 ms).
 */
export const SCREEN_PARSE_SHARED_BYTES_PER_S = 256 * 1024;
export const SCREEN_PARSE_SHARED_BURST_BYTES = 512 * 1024;
/**
 * What a screen parses of its own burst before it counts as flooding and needs the shared budget
 * too. It was half the burst (128 KiB): 20 floods starting at once each parsed that much first,
 * about 3 MiB of parse cost in all (screen.test.ts), in xterm's timers on the event loop. A
 * command's output (a manifest, `kubectl get -A`) that is larger draws on the shared budget, or
 * leaves the screen to be rebuilt when needed.
 */
export const SCREEN_PARSE_FREE_BYTES = 32 * 1024;

/**
 * What a line feed costs the parser, in bytes of plain text: the budgets above count a chunk's
 * bytes plus this for each of its line feeds (parseCost). Measured with @xterm/headless 6 on a
 * 120-column screen with 500 lines of scrollback: ~11 ns per byte of text, ~0.15 µs more per line
 * feed (the scroll), so 1 MiB of `yes` parses in ~90 ms against ~12 ms for 1 MiB of 60-character
 * lines. Counted in bytes alone, 20 `yes` starting at once had the screens parse ~6 MiB in their
 * first 10 s; counted this way, ~300 KiB (bench/typing-under-load.ts).
 */
export const SCREEN_LINE_FEED_COST = 16;

/** A chunk's parse cost in budget bytes: its bytes, and SCREEN_LINE_FEED_COST more per line feed. */
export function parseCost(chunk: Uint8Array): number {
  let lineFeeds = 0;
  for (let i = 0; i < chunk.length; i++) if (chunk[i] === 10) lineFeeds++;
  return chunk.byteLength + lineFeeds * SCREEN_LINE_FEED_COST;
}

/** A token bucket: `rate` bytes/s up to `burst`, on the clock it is given. */
class Bucket {
  private tokens: number;
  private at: number;
  constructor(
    private readonly rate: number,
    private readonly burst: number,
    now: number,
  ) {
    this.tokens = burst;
    this.at = now;
  }
  level(now: number): number {
    this.tokens = Math.min(this.burst, this.tokens + ((now - this.at) / 1000) * this.rate);
    this.at = Math.max(this.at, now);
    return this.tokens;
  }
  take(n: number): void {
    this.tokens -= n;
  }
}

/** The process-wide bucket, per clock (tests give screens their own clocks). */
const shared = new WeakMap<() => number, Bucket>();
const performanceNow = () => performance.now();

export interface Snapshot {
  /** Offset of the first output byte after the state the snapshot shows. */
  offset: number;
  /** Escape sequences that repaint the screen (and scrollback) on a cleared terminal. */
  data: string;
}

export class Screen {
  private readonly term: InstanceType<typeof HeadlessTerminal>;
  private readonly serializer = new SerializeAddon();
  /** Offset of the next byte written to the headless terminal. */
  private nextOffset: number;
  /** Bytes written and not yet parsed. */
  private backlog = 0;
  /** True once a flood outran the parser or its parse budget: bytes are skipped until the next rebuild. */
  private lagging = false;
  private disposed = false;
  /** The parse budgets: this screen's (SCREEN_PARSE_BYTES_PER_S) and the process's. */
  private readonly own: Bucket;
  private readonly shared: Bucket;

  constructor(
    size: PtySize,
    startOffset = 0,
    private readonly now: () => number = performanceNow,
  ) {
    this.own = new Bucket(SCREEN_PARSE_BYTES_PER_S, SCREEN_PARSE_BURST_BYTES, now());
    let bucket = shared.get(now);
    if (!bucket) shared.set(now, (bucket = new Bucket(SCREEN_PARSE_SHARED_BYTES_PER_S, SCREEN_PARSE_SHARED_BURST_BYTES, now())));
    this.shared = bucket;
    this.term = new HeadlessTerminal({ cols: size.cols, rows: size.rows, scrollback: SCREEN_SCROLLBACK_LINES, allowProposedApi: true });
    this.term.loadAddon(this.serializer as never);
    this.nextOffset = startOffset;
  }

  /** Offset right after the last byte written (parsed or skipped). */
  get endOffset(): number {
    return this.nextOffset;
  }

  /** Whether bytes were skipped since the last rebuild (a snapshot must rebuild first). */
  get stale(): boolean {
    return this.lagging;
  }

  /** Output at `offset`; a jump (bytes skipped or repeated) starts over from a blank screen. */
  write(offset: number, chunk: Uint8Array): void {
    if (this.disposed) return;
    const n = chunk.byteLength;
    if (this.lagging || this.backlog + n > SCREEN_BACKLOG_BYTES) return this.skip(offset, n);
    const t = this.now();
    const own = this.own.level(t);
    const cost = parseCost(chunk);
    // Flooding (past the free part of its own burst): the chunk also needs the process's shared budget.
    const flooding = own - cost < SCREEN_PARSE_BURST_BYTES - SCREEN_PARSE_FREE_BYTES;
    if (cost > own || (flooding && cost > this.shared.level(t))) return this.skip(offset, n);
    if (offset !== this.nextOffset) this.term.reset();
    this.own.take(cost);
    if (flooding) this.shared.take(cost);
    this.feed(chunk);
    this.nextOffset = offset + chunk.byteLength;
  }

  /** Output not parsed (over budget, or after that until the next rebuild): the screen is stale. */
  private skip(offset: number, n: number): void {
    this.lagging = true;
    this.nextOffset = offset + n;
  }

  /** Starts over from `chunks` (the replay buffer, from `startOffset`): after a flood was skipped. */
  rebuild(startOffset: number, chunks: Uint8Array[]): void {
    if (this.disposed) return;
    this.term.reset();
    this.lagging = false;
    for (const chunk of chunks) this.feed(chunk);
    this.nextOffset = startOffset + chunks.reduce((n, c) => n + c.byteLength, 0);
  }

  private feed(chunk: Uint8Array): void {
    const n = chunk.byteLength;
    this.backlog += n;
    this.term.write(chunk, () => (this.backlog -= n));
  }

  resize(size: PtySize): void {
    if (!this.disposed && (size.cols !== this.term.cols || size.rows !== this.term.rows)) this.term.resize(size.cols, size.rows);
  }

  /**
   * The screen after every byte written so far. xterm parses asynchronously; the callback of an
   * empty write runs right after the bytes before it are parsed and before any written later.
   */
  snapshot(): Promise<Snapshot> {
    const offset = this.nextOffset;
    return new Promise((resolve, reject) => {
      if (this.disposed) return reject(new Error("screen disposed"));
      this.term.write("", () => {
        if (this.disposed) return reject(new Error("screen disposed"));
        resolve({ offset, data: this.serializer.serialize({ scrollback: SCREEN_SCROLLBACK_LINES }) });
      });
    });
  }

  dispose(): void {
    if (this.disposed) return;
    this.disposed = true;
    this.term.dispose();
  }
}
