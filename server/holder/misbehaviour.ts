/**
 * Ways a holder breaks its protocol. A machine's root (a learner) can replace the holder, so
 * every one of these is expected, and each ends the same way on the server's side (a capped
 * backoff, then the direct shell; server/terminal/holder-health.ts): `kind` names which it was.
 */
export const HOLDER_MISBEHAVIOURS = [
  /** GONE for an OPEN that cannot be gone (from the end), or GONE right after OPENED, again and again. */
  "gone-loop",
  /** A frame that does not parse: bad length, unknown type, bad JSON, missing fields. */
  "bad-frame",
  /** An integer outside 0..2^53-1, output past 2^53-1, or OPENED not oldest ≤ start ≤ end. */
  "out-of-range",
  /** The link closed before OPENED, or soon after it. */
  "closed-after-open",
  /** ERROR for the terminal's OPEN. */
  "refused",
  /** Another protocol generation, or no answer to OPEN in time. */
  "protocol",
  /** More OPENs than a working holder ever needs (a loop the other kinds did not catch). */
  "open-rate",
] as const;
export type HolderMisbehaviour = (typeof HOLDER_MISBEHAVIOURS)[number];

/** The holder broke its protocol in the way `kind` names; the message says how. */
export class HolderMisbehaviourError extends Error {
  constructor(
    readonly kind: HolderMisbehaviour,
    message: string,
  ) {
    super(message);
    this.name = "HolderMisbehaviourError";
  }
}

export function isHolderMisbehaviour(error: unknown): error is HolderMisbehaviourError {
  return error instanceof HolderMisbehaviourError;
}

/** Largest integer the holder may send in any field: every one of them must be exact as a number. */
export const HOLDER_MAX_INT = Number.MAX_SAFE_INTEGER;

/** Whether `value` is an integer in 0..2^53-1. */
export function isHolderInt(value: unknown): value is number {
  return Number.isSafeInteger(value) && (value as number) >= 0;
}

/** OPENED's offsets in order: oldest ≤ start ≤ end (what a working holder always sends). */
export function openedInOrder(o: { oldest: number; start: number; end: number }): boolean {
  return o.oldest <= o.start && o.start <= o.end;
}
