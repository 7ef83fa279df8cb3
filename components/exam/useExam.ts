"use client";
/**
 * The exam attempt as the server has it (GET /api/sessions/:id/exam), asked again every
 * EXAM_POLL_MS (until it is scored) and whenever the page comes back into view, so a submission
 * by time (the state turns "scoring"), the start of the time and the end of the scoring are seen
 * without a reload. Keeps how far the
 * server's clock is ahead of the page's, for the countdown.
 */
import { useTranslations } from "next-intl";
import { useCallback, useEffect, useRef, useState } from "react";
import { graderErrorText } from "@/components/lab/grader-api";
import { clockOffsetMs } from "./countdown";
import { fetchExam, type ExamMarks, type ExamView } from "./exam-api";

/** How often the attempt is asked for, ms. */
export const EXAM_POLL_MS = 10_000;

export type ExamFeed = {
  /** Undefined until the first answer. */
  exam: ExamView | undefined;
  /** How far the server's clock is ahead of the page's, ms. */
  offsetMs: number;
  /** Why the last request failed, for the learner; undefined when it did not. */
  error: string | undefined;
  /** Asks again now (after a refused action, a submission). */
  refresh(): void;
  /** Applies the marks a PUT answered with. */
  applyMarks(marks: ExamMarks): void;
};

export function useExam(sessionId: string | undefined): ExamFeed {
  const tg = useTranslations("grader");
  const tgRef = useRef(tg);
  tgRef.current = tg;
  const [exam, setExam] = useState<ExamView>();
  const [offsetMs, setOffsetMs] = useState(0);
  const [error, setError] = useState<string>();
  const latest = useRef(0);
  /** A scored attempt changes no more: the timer stops asking (a focus still asks). */
  const scored = useRef(false);

  const refresh = useCallback(() => {
    if (!sessionId) return;
    const ask = ++latest.current;
    const sentAt = Date.now();
    fetchExam(sessionId).then(
      (view) => {
        if (ask !== latest.current) return; // an older answer than one already shown
        scored.current = view.state === "scored";
        setOffsetMs(clockOffsetMs(view.serverNow, sentAt, Date.now()));
        setExam(view);
        setError(undefined);
      },
      (err: unknown) => ask === latest.current && setError(graderErrorText(err, tgRef.current)),
    );
  }, [sessionId]);

  useEffect(() => {
    if (!sessionId) return;
    refresh();
    const timer = setInterval(() => scored.current || refresh(), EXAM_POLL_MS);
    const onVisible = () => document.visibilityState === "visible" && refresh();
    window.addEventListener("focus", refresh);
    document.addEventListener("visibilitychange", onVisible);
    return () => {
      clearInterval(timer);
      window.removeEventListener("focus", refresh);
      document.removeEventListener("visibilitychange", onVisible);
    };
  }, [sessionId, refresh]);

  const applyMarks = useCallback((marks: ExamMarks) => setExam((shown) => shown && { ...shown, marks }), []);
  return { exam, offsetMs, error, refresh, applyMarks };
}
