/**
 * How one terminal's holder has behaved lately (holder-connector.ts keeps one per terminal): the
 * OPENs it was sent in the last minute and the failures in a row since its link last worked.
 * A machine's root can replace the holder, so a holder that loops, sends junk or closes at once is
 * expected: after a capped backoff the terminal takes the direct shell (holder-fallback.ts), and
 * the reason is classified once, holder-misbehaving (a hostile or broken holder) versus
 * unreachable (no holder answered at all).
 */
import { HolderMisbehaviourError, isHolderMisbehaviour, type HolderMisbehaviour } from "../holder/misbehaviour";

/**
 * OPENs one terminal may send its holder per OPEN_RATE_WINDOW_MS: a working holder needs a
 * handful (attach, a GONE's re-open, reconnects); beyond, whatever loops is cut off.
 */
export const HOLDER_OPENS_PER_WINDOW = 20;
/** The window HOLDER_OPENS_PER_WINDOW counts over, ms. */
export const OPEN_RATE_WINDOW_MS = 60_000;
/** Holder failures in a row (links that misbehaved before they worked) after which the terminal takes the direct shell. */
export const HOLDER_FAILURE_STREAK = 4;
/** How long a link must work after OPENED (no misbehaviour, not closed) for its holder to count as healthy again, ms. */
export const HOLDER_HEALTHY_MS = 1_000;
/** Waits before the next try after the 1st, 2nd, ... failure in a row, ms (the last one repeats): the cap. */
export const HOLDER_BACKOFF_MS = [500, 1_000, 2_000, 4_000];

/** A failure's reason as logged: which misbehaviour, or why no holder answered. */
export type HolderFailureReason = `holder-misbehaving: ${HolderMisbehaviour}` | `unreachable: ${string}`;

/** System error codes a holder that is not there shows (the exec relay prints Python's wording). */
const UNREACHABLE_CODES: [RegExp, string][] = [
  [/ECONNREFUSED|Connection refused/i, "ECONNREFUSED"],
  [/ENOENT|No such file or directory/i, "ENOENT"],
  [/EACCES|Permission denied/i, "EACCES"],
  [/ETIMEDOUT|timed out|no HELLO/i, "ETIMEDOUT"],
  [/ECONNRESET/i, "ECONNRESET"],
  [/EHOSTUNREACH/i, "EHOSTUNREACH"],
];

/** Classifies why the holder failed: `holder-misbehaving: <kind>` or `unreachable: <code>`. */
export function holderFailureReason(error: unknown): HolderFailureReason {
  if (isHolderMisbehaviour(error)) return `holder-misbehaving: ${error.kind}`;
  const text = error instanceof Error ? `${(error as NodeJS.ErrnoException).code ?? ""} ${error.message}` : String(error);
  for (const [pattern, code] of UNREACHABLE_CODES) if (pattern.test(text)) return `unreachable: ${code}`;
  return "unreachable: no-holder";
}

/** One terminal's holder record: OPEN rate, failure streak and the backoff they call for. */
export class HolderHealth {
  /** Times of the OPENs in the current window, oldest first, ms. */
  private opens: number[] = [];
  private streak = 0;
  private lastReason: HolderFailureReason | null = null;
  /** The OPEN cap was hit: the holder is done with until a probe finds it healthy (reset). */
  private rateExceeded = false;

  constructor(private readonly now: () => number = Date.now) {}

  /** Counts an OPEN about to be sent; false when it would pass the cap (then do not send it). */
  allowOpen(): boolean {
    const t = this.now();
    while (this.opens.length && this.opens[0]! <= t - OPEN_RATE_WINDOW_MS) this.opens.shift();
    if (this.opens.length >= HOLDER_OPENS_PER_WINDOW) {
      this.rateExceeded = true;
      return false;
    }
    this.opens.push(t);
    return true;
  }

  /** A link failed; returns the classified reason. */
  failed(error: unknown): HolderFailureReason {
    this.streak++;
    this.lastReason = holderFailureReason(error);
    if (isHolderMisbehaviour(error) && error.kind === "open-rate") this.rateExceeded = true;
    return this.lastReason;
  }

  /** A link worked for HOLDER_HEALTHY_MS: the streak starts again. */
  healthy(): void {
    this.streak = 0;
  }

  /** A probe found the holder healthy again: everything is forgotten but the OPEN window. */
  reset(): void {
    this.streak = 0;
    this.rateExceeded = false;
    this.lastReason = null;
  }

  /** Failures in a row. */
  get failures(): number {
    return this.streak;
  }

  /** The terminal should take the direct shell instead of trying the holder again. */
  get givenUp(): boolean {
    return this.rateExceeded || this.streak >= HOLDER_FAILURE_STREAK;
  }

  get reason(): HolderFailureReason | null {
    return this.rateExceeded ? "holder-misbehaving: open-rate" : this.lastReason;
  }

  /** How long to wait before the next try, ms (0 with no failure in a row). */
  backoffMs(): number {
    if (this.streak === 0) return 0;
    return HOLDER_BACKOFF_MS[Math.min(this.streak, HOLDER_BACKOFF_MS.length) - 1]!;
  }
}

/** Longest a holder has to answer an OPEN (OPENED, GONE or ERROR), ms: twice its time for HELLO (an OPEN may spawn a shell on a slow guest). */
export const HOLDER_ANSWER_MS = 10_000;

/** `promise`, or a `protocol` misbehaviour when it has not settled within HOLDER_ANSWER_MS (a holder that stalls). */
export async function answered<T>(promise: Promise<T>, what: string, ms = HOLDER_ANSWER_MS): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new HolderMisbehaviourError("protocol", `no answer to ${what} within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([promise, late]);
  } finally {
    clearTimeout(timer);
  }
}
