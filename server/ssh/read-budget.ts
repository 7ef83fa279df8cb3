/**
 * How much of the terminals' bulk output this process takes in per turn of its event loop, shared
 * by every SSH connection and holder link (ssh.ts readFairly, holder/client.ts HolderLink), so that
 * a keystroke's echo never waits behind a large slice of other terminals' floods.
 *
 * A stream is handed over as it comes (Node's flowing mode) until it has taken READ_QUANTUM_BYTES
 * since it last waited, or the process has taken TURN_READ_BYTES in this turn: then it pauses and
 * waits in line, and the turns that follow resume the waiting streams in order while the turn's
 * budget lasts. Reads under SMALL_READ_BYTES (an echo, an acknowledgement) never wait.
 *
 * Before (bench/typing-under-load.ts, the gateway's CPU profile): libuv read a ready socket up to
 * 32 times per turn, and a stream resumed by flow control handed over its whole buffer (up to the
 * SSH window) at once; with 20 watched floods the profile showed turns of 0.3-0.5 s in that path
 * (wall time, which on that 2-core box also held the thread's wait for a CPU: schedstat).
 */

/** What the whole process takes in per turn before streams wait for the next one, bytes. */
export const TURN_READ_BYTES = 256 * 1024;
/** What one stream takes before it lets the others in line go first, bytes. */
export const READ_QUANTUM_BYTES = 64 * 1024;
/** A read smaller than this is interactive (an echo): it counts, but never makes its stream wait. */
export const SMALL_READ_BYTES = 2 * 1024;

export interface BudgetedReader {
  /** Counts a read of `n` bytes; returns true when the stream was paused to wait its turn. */
  took(n: number): boolean;
  /** Paused by the budget, waiting in line (the stream's own resume must then wait too). */
  readonly waiting: boolean;
}

export class ReadBudget {
  private spent = 0;
  private scheduled = false;
  private readonly line: (() => void)[] = [];

  constructor(
    private readonly turnBytes = TURN_READ_BYTES,
    private readonly quantumBytes = READ_QUANTUM_BYTES,
  ) {}

  /** Streams waiting for a later turn. */
  get waiting(): number {
    return this.line.length;
  }

  /**
   * A stream's account: `pause` stops its reads now, `resume` starts them again (a stream paused
   * for another reason, e.g. flow control, checks that itself and stays paused).
   */
  reader(pause: () => void, resume: () => void): BudgetedReader {
    let since = 0;
    let waiting = false;
    return {
      get waiting() {
        return waiting;
      },
      took: (n) => {
        this.spent += n;
        since += n;
        this.schedule();
        if (waiting || n < SMALL_READ_BYTES || (since < this.quantumBytes && this.spent < this.turnBytes)) return false;
        waiting = true;
        pause();
        this.line.push(() => {
          waiting = false;
          since = 0;
          resume();
        });
        return true;
      },
    };
  }

  /** One immediate per turn with reads: it starts the turn's budget and serves the line. */
  private schedule(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      this.spent = 0;
      this.serve();
    });
  }

  /**
   * Resumes the first stream in line; the next one after the stream's own flow has run (Node
   * resumes a stream in a nextTick, queued before this one's), while the budget lasts.
   */
  private serve(): void {
    if (this.line.length === 0) return;
    if (this.spent >= this.turnBytes) return this.schedule();
    this.line.shift()!();
    process.nextTick(() => this.serve());
  }
}

/** The process's budget. */
export const readBudget = new ReadBudget();
