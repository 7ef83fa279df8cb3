/**
 * Per-user cap on live event streams (SSE) in this process: a user with MAX_STREAMS_PER_USER open
 * gets 429 tooManyStreams for the next one. A lab page opens one, a dashboard one; the cap is for
 * the hundreds of stalled viewers an attacker would open. A stream whose user's access changed
 * is re-decided and closed with a reason (revokeOnAccessChange).
 */
import { Denied } from "../denied";

export const MAX_STREAMS_PER_USER = 8;

const open = new Map<string, number>();

/** A slot for one stream of `userId`, or null when they have too many; the release is idempotent. */
export function acquireStream(userId: string, max = MAX_STREAMS_PER_USER): (() => void) | null {
  const n = open.get(userId) ?? 0;
  if (n >= max) return null;
  open.set(userId, n + 1);
  let released = false;
  return () => {
    if (released) return;
    released = true;
    const left = (open.get(userId) ?? 1) - 1;
    if (left > 0) open.set(userId, left);
    else open.delete(userId);
  };
}

/** Streams `userId` has open now (tests, metrics). */
export function openStreams(userId: string): number {
  return open.get(userId) ?? 0;
}

/**
 * Takes a slot for a stream answering `request`: null (and the caller answers 429) when full;
 * otherwise the release, also run when the client goes away.
 */
export function streamSlot(request: Request, userId: string): (() => void) | null {
  const release = acquireStream(userId);
  if (!release) return null;
  request.signal.addEventListener("abort", release, { once: true });
  return release;
}

/** Why an open event stream was closed: sent as `event: revoked` before the stream ends. */
export type StreamRevokedReason = "signedOut" | "accessRevoked" | "cohortEnded";

/**
 * Closes a user's event stream when an access notice says their reach changed and `recheck`
 * (the route's own checks again, with the stream's request headers) now refuses: a Denied 401 is
 * `signedOut`, `cohortEnded` says so, anything else `accessRevoked`. Returns the unsubscribe.
 */
export function revokeOnAccessChange(
  bus: { onAccessChange(listener: (userId: string | null) => void): () => void },
  userId: string,
  recheck: () => Promise<unknown>,
  revoke: (reason: StreamRevokedReason) => void,
): () => void {
  return bus.onAccessChange((changed) => {
    if (changed !== null && changed !== userId) return;
    recheck().then(
      () => undefined,
      (error: unknown) => {
        // Anything but a refusal (the database away): keep the stream; the next notice decides.
        if (!(error instanceof Denied)) return;
        revoke(error.status === 401 ? "signedOut" : error.code === "cohortEnded" ? "cohortEnded" : "accessRevoked");
      },
    );
  });
}

/** What a route writes into its event stream (eventStream). */
export interface EventStreamOut {
  /** Writes one event; dropped once the stream has ended. */
  send(event: string, data: unknown): void;
  /** Writes `event: revoked` with the reason and ends the stream. */
  revoke(reason: StreamRevokedReason): void;
  /** Runs `fn` when the stream ends for any reason (at once if it has ended already). */
  onClose(fn: () => void): void;
}

/** Interval of the keep-alive comment that keeps proxies from closing an idle stream, ms. */
export const KEEPALIVE_MS = 15_000;

/**
 * A Server-Sent Events response: `open` subscribes what the route streams and registers its
 * unsubscribes with `out.onClose`. The stream ends when the client goes away, when a write fails,
 * or on `out.revoke`; then every onClose runs once and `release` (the user's stream slot) is given
 * back. A keep-alive comment goes out every KEEPALIVE_MS.
 */
export function eventStream(request: Request, release: () => void, open: (out: EventStreamOut) => Promise<void> | void): Response {
  const encoder = new TextEncoder();
  const closers: (() => void)[] = [];
  let ended = false;
  let controllerRef: ReadableStreamDefaultController<Uint8Array> | null = null;
  /** Ends the stream (with `error`: errored, so the client sees it break rather than end). */
  const end = (error?: unknown) => {
    if (ended) return;
    ended = true;
    for (const fn of closers.splice(0)) fn();
    release();
    try {
      if (error === undefined) controllerRef?.close();
      else controllerRef?.error(error);
    } catch {
      // already closed
    }
  };
  const write = (text: string) => {
    if (ended || !controllerRef) return;
    try {
      controllerRef.enqueue(encoder.encode(text));
    } catch {
      end(); // the client went away
    }
  };
  const out: EventStreamOut = {
    send: (event, data) => write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`),
    revoke: (reason) => {
      out.send("revoked", { reason });
      end();
    },
    onClose: (fn) => {
      if (ended) fn();
      else closers.push(fn);
    },
  };
  const stream = new ReadableStream<Uint8Array>({
    async start(controller) {
      controllerRef = controller;
      const keepalive = setInterval(() => write(": keepalive\n\n"), KEEPALIVE_MS);
      out.onClose(() => clearInterval(keepalive));
      request.signal.addEventListener("abort", () => end(), { once: true });
      try {
        await open(out);
      } catch (error) {
        end(error);
      }
    },
    cancel: () => end(),
  });
  return new Response(stream, {
    headers: { "Content-Type": "text/event-stream; charset=utf-8", "Cache-Control": "no-cache, no-transform", Connection: "keep-alive" },
  });
}
