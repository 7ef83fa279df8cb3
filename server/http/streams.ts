/**
 * Per-user caps on long responses in this process, by kind: a user with the kind's cap open gets
 * 429 for the next one (tooManyStreams for event streams, tooManyRecordingStreams for recording
 * downloads). A lab page opens one event stream, a dashboard one; the cap is for the hundreds of
 * stalled viewers an attacker would open. A recording download costs a database page and a
 * little CPU per 16 KiB for as long as it runs, so a few at once per user are enough. A stream
 * whose user's access changed is re-decided and closed with a reason (revokeOnAccessChange).
 */
import { Denied } from "../denied";

/** What a stream slot is for: live event streams (SSE) or recording downloads (asciicast). */
export type StreamKind = "events" | "recording";

/** Streams of each kind one user may have open at once in this process. */
export const MAX_STREAMS_PER_USER: Record<StreamKind, number> = { events: 8, recording: 4 };

/** Open streams by kind and user id. */
const open: Record<StreamKind, Map<string, number>> = { events: new Map(), recording: new Map() };

/** A slot for one stream of `userId`, or null when they have too many of that kind; the release is idempotent. */
export function acquireStream(userId: string, kind: StreamKind = "events"): (() => void) | null {
  const counts = open[kind];
  const n = counts.get(userId) ?? 0;
  if (n >= MAX_STREAMS_PER_USER[kind]) return null;
  counts.set(userId, n + 1);
  let released = false;
  return () => {
    if (released) return;
    released = true;
    const left = (counts.get(userId) ?? 1) - 1;
    if (left > 0) counts.set(userId, left);
    else counts.delete(userId);
  };
}

/** Streams of `kind` that `userId` has open now (tests, metrics). */
export function openStreams(userId: string, kind: StreamKind = "events"): number {
  return open[kind].get(userId) ?? 0;
}

/**
 * Takes a slot for a stream answering `request`: null (and the caller answers 429) when full;
 * otherwise the release, also run when the client goes away.
 */
export function streamSlot(request: Request, userId: string, kind: StreamKind = "events"): (() => void) | null {
  const release = acquireStream(userId, kind);
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
