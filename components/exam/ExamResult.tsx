"use client";
/**
 * The exam's result page body: GET /api/sessions/:id/exam/result, asked again every
 * RESULT_POLL_MS while the attempt is still being scored (409), then shown (ExamResultView).
 */
import { useTranslations } from "next-intl";
import { useEffect, useRef, useState } from "react";
import { GraderApiError, graderErrorText } from "@/components/lab/grader-api";
import { fetchResult, type ExamResult as Result } from "./exam-api";
import { ExamResultView } from "./ExamResultView";

/** How often a result still being scored is asked for, ms. */
const RESULT_POLL_MS = 3_000;

type Shown =
  | { phase: "loading" }
  | { phase: "scoring" }
  | { phase: "missing" }
  | { phase: "failed"; error: string }
  | { phase: "scored"; result: Result };

export function ExamResult({ sessionId }: { sessionId: string }) {
  const shown = useResult(sessionId);
  const t = useTranslations("examResult");
  if (shown.phase === "scored") return <ExamResultView sessionId={sessionId} result={shown.result} />;
  const text =
    shown.phase === "loading"
      ? t("loading")
      : shown.phase === "scoring"
        ? t("scoring")
        : shown.phase === "missing"
          ? t("missing")
          : `${t("loadFailed")}: ${shown.error}`;
  return (
    <p role="status" data-testid="exam-result" data-phase={shown.phase} className="p-6 text-sm text-slate-600">
      {text}
    </p>
  );
}

/** The result, or where it is: asked again while scoring or after a failure, not after a 404. */
function useResult(sessionId: string): Shown {
  const tg = useTranslations("grader");
  const tgRef = useRef(tg);
  tgRef.current = tg;
  const [shown, setShown] = useState<Shown>({ phase: "loading" });
  useEffect(() => {
    const abort = new AbortController();
    let timer: ReturnType<typeof setTimeout> | undefined;
    const ask = () => {
      fetchResult(sessionId, abort.signal).then(
        (result) => setShown({ phase: "scored", result }),
        (err: unknown) => {
          if (abort.signal.aborted) return;
          if (err instanceof GraderApiError && err.status === 404) return setShown({ phase: "missing" });
          setShown(
            err instanceof GraderApiError && err.status === 409
              ? { phase: "scoring" }
              : { phase: "failed", error: graderErrorText(err, tgRef.current) },
          );
          timer = setTimeout(ask, RESULT_POLL_MS);
        },
      );
    };
    ask();
    return () => {
      abort.abort();
      clearTimeout(timer);
    };
  }, [sessionId]);
  return shown;
}
