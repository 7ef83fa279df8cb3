"use client";
/**
 * A lab session's progress, live: GET /progress once, then every `progress` event of the
 * Server-Sent Events stream. EventSource reconnects by itself after a dropped connection; each
 * (re)open fetches /progress again, so changes made while disconnected are never missed.
 */
import { useTranslations } from "next-intl";
import { useCallback, useEffect, useState } from "react";
import type { Progress } from "@/server/grader/progress";
import { RevokedReason } from "@/server/terminal/protocol";
import { fetchProgress, graderErrorText, parseProgressEvent, progressEventsUrl } from "./grader-api";

/** The reason of a `revoked` event (`{"reason": …}`); unknown or malformed data reads as accessRevoked. */
export function revokedReason(data: string): RevokedReason {
  try {
    return RevokedReason.catch("accessRevoked").parse((JSON.parse(data) as { reason?: unknown }).reason);
  } catch {
    return "accessRevoked";
  }
}

/**
 * Wait before opening the stream again after the server refused it (an HTTP error or a restart:
 * EventSource gives up on those instead of reconnecting), in ms: doubled per attempt up to the
 * cap, plus up to 30 % jitter so a classroom does not reconnect in lockstep.
 */
const STREAM_RETRY_MIN_MS = 1_000;
const STREAM_RETRY_MAX_MS = 30_000;

/** `live` while the event stream is open; `reconnecting` after it dropped, until it is open again. */
export type ProgressStreamStatus = "connecting" | "live" | "reconnecting";

export type ProgressFeed = {
  /** Undefined until the first answer. */
  progress: Progress | undefined;
  status: ProgressStreamStatus;
  /** Why progress could not be loaded (shown while there is no progress yet). */
  error: string | undefined;
  /** Takes progress from another answer (a check run); ignored when older than what is shown. */
  apply(next: Progress): void;
};

export function useProgress(sessionId: string | undefined): ProgressFeed {
  const tg = useTranslations("grader");
  const tr = useTranslations("revoked");
  const [progress, setProgress] = useState<Progress>();
  const [status, setStatus] = useState<ProgressStreamStatus>("connecting");
  const [error, setError] = useState<string>();

  const apply = useCallback((next: Progress) => {
    setProgress((shown) => (shown !== undefined && isOlder(next, shown) ? shown : next));
    setError(undefined);
  }, []);

  useEffect(() => {
    if (sessionId === undefined) return;
    let disposed = false;
    let source: EventSource | undefined;
    let retryTimer: ReturnType<typeof setTimeout> | undefined;
    let attempt = 0;
    let pending: AbortController | undefined;

    const refetch = () => {
      pending?.abort();
      const abort = (pending = new AbortController());
      fetchProgress(sessionId, abort.signal).then(
        (next) => {
          if (!disposed) apply(next);
        },
        (err: unknown) => {
          if (disposed || abort.signal.aborted) return;
          setError(graderErrorText(err, tg));
        },
      );
    };

    const open = () => {
      const stream = (source = new EventSource(progressEventsUrl(sessionId)));
      stream.onopen = () => {
        attempt = 0;
        setStatus("live");
        refetch();
      };
      stream.addEventListener("progress", (event) => {
        const next = parseProgressEvent(event.data);
        if (next !== undefined) apply(next);
      });
      // Access ended while open (signed out, removed, cohort ended): stop, say why, no retries.
      stream.addEventListener("revoked", (event) => {
        stream.close();
        disposed = true;
        setError(tr(revokedReason((event as MessageEvent<string>).data)));
      });
      stream.onerror = () => {
        if (disposed) return;
        setStatus("reconnecting");
        if (stream.readyState !== EventSource.CLOSED) return; // EventSource retries by itself
        stream.close();
        const wait = Math.min(STREAM_RETRY_MAX_MS, STREAM_RETRY_MIN_MS * 2 ** attempt);
        attempt++;
        retryTimer = setTimeout(open, wait * (1 + Math.random() * 0.3));
      };
    };

    refetch();
    open();
    return () => {
      disposed = true;
      clearTimeout(retryTimer);
      source?.close();
      pending?.abort();
    };
  }, [sessionId, apply, tg, tr]);

  return { progress, status, error, apply };
}

/**
 * Within a session progress only moves forward: steps get done, hints get revealed, checks get
 * newer. Answers can arrive out of order (a /progress fetch started before an event, a check the
 * learner started that finishes after a background check already passed the step), and an older
 * one must not roll the view back.
 */
export function isOlder(next: Progress, shown: Progress): boolean {
  if (next.sessionId !== shown.sessionId) return false;
  const done = (p: Progress) => p.steps.filter((s) => s.state === "done").length;
  if (done(next) !== done(shown)) return done(next) < done(shown);
  if (next.hintsRevealed.length !== shown.hintsRevealed.length) {
    return next.hintsRevealed.length < shown.hintsRevealed.length;
  }
  return checkTime(next) < checkTime(shown);
}

function checkTime(p: Progress): number {
  const at = p.lastCheck === null ? NaN : Date.parse(p.lastCheck.at);
  return Number.isNaN(at) ? 0 : at;
}
