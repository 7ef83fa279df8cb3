"use client";
/**
 * The exam's countdown in the header and its alerts: a banner under the header (aria-live, so a
 * screen reader says it too) when 30, 15 and 5 minutes are left, each once, on the server's clock.
 */
import { useTranslations } from "next-intl";
import { useEffect, useRef, useState } from "react";
import { clockText, dueAlert, remainingMs, type AlertMinutes } from "./countdown";
import type { ExamFeed } from "./useExam";

/** How often the countdown is redrawn, ms. */
const TICK_MS = 1_000;
/** Under this much time left the clock turns red, ms. */
const URGENT_MS = 5 * 60_000;

export type Countdown = {
  /** Time left, ms; null before the time starts (no deadline yet). */
  leftMs: number | null;
  /** The alert shown now, until dismissed; null for none. */
  alert: AlertMinutes | null;
  dismiss(): void;
};

/** Time left to `deadline` (ISO, null before the time starts), with the server's clock `offsetMs` ahead of the page's. */
export function useCountdown(deadline: string | null, offsetMs: number): Countdown {
  const [pageNow, setPageNow] = useState(() => Date.now());
  const [alert, setAlert] = useState<AlertMinutes | null>(null);
  const shown = useRef<ReadonlySet<AlertMinutes>>(new Set());

  useEffect(() => {
    if (deadline === null) return;
    setPageNow(Date.now());
    const timer = setInterval(() => setPageNow(Date.now()), TICK_MS);
    return () => clearInterval(timer);
  }, [deadline]);

  const leftMs = deadline === null ? null : remainingMs(deadline, offsetMs, pageNow);
  useEffect(() => {
    if (leftMs === null || leftMs === 0) return;
    const due = dueAlert(leftMs, shown.current);
    shown.current = due.shown;
    if (due.alert !== null) setAlert(due.alert);
  }, [leftMs]);

  return { leftMs, alert, dismiss: () => setAlert(null) };
}

/**
 * The exam's countdown while it runs (none before the time starts or after the submission), and
 * whether it has reached 0:00: the server then submits by itself, and the attempt is asked for
 * at once rather than at the next poll.
 */
export function useExamClock(feed: ExamFeed): Countdown & { timeUp: boolean } {
  const { exam, offsetMs, refresh } = feed;
  const running = exam?.state === "running";
  const countdown = useCountdown(running ? exam.deadline : null, offsetMs);
  const timeUp = countdown.leftMs === 0;
  useEffect(() => {
    if (timeUp) refresh();
  }, [timeUp, refresh]);
  return { ...countdown, alert: running ? countdown.alert : null, timeUp };
}

export function ExamClock({ leftMs }: { leftMs: number | null }) {
  const t = useTranslations("exam");
  if (leftMs === null) {
    return (
      <span data-testid="exam-clock" className="text-xs text-slate-500">
        {t("clockNotStarted")}
      </span>
    );
  }
  const urgent = leftMs <= URGENT_MS;
  return (
    <span className="flex items-baseline gap-1.5 text-xs text-slate-500">
      {t("timeLeft")}
      <span
        role="timer"
        data-testid="exam-clock"
        data-left-ms={leftMs}
        className={`font-mono text-base font-semibold tabular-nums ${urgent ? "text-red-700" : "text-slate-900"}`}
      >
        {clockText(leftMs)}
      </span>
    </span>
  );
}

/** The "N minutes left" banner; always mounted, so its text is announced when it appears. */
export function ExamAlert({ alert, onDismiss }: { alert: AlertMinutes | null; onDismiss(): void }) {
  const t = useTranslations("exam");
  return (
    <div aria-live="assertive" aria-atomic="true">
      {alert !== null && (
        <div
          data-testid="exam-alert"
          data-minutes={alert}
          className={`flex items-center gap-3 border-b px-4 py-2 text-sm font-semibold ${
            alert === 5 ? "border-red-300 bg-red-50 text-red-900" : "border-amber-300 bg-amber-50 text-amber-900"
          }`}
        >
          <span>{t("alert", { minutes: alert })}</span>
          <button
            type="button"
            onClick={onDismiss}
            className="ml-auto rounded px-2 py-0.5 text-xs font-normal underline underline-offset-2 hover:bg-white/60"
          >
            {t("dismiss")}
          </button>
        </div>
      )}
    </div>
  );
}
