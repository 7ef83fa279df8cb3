"use client";
/**
 * Where the attempt is, above the tasks: machines still starting (the time has not started),
 * submitted and scoring (by the learner, or by the time), scored with a link to the result, or
 * the attempt could not be loaded. Nothing while the exam runs.
 */
import { useTranslations } from "next-intl";
import Link from "next/link";
import type { ExamView } from "./exam-api";

export function ExamStatus(props: {
  sessionId: string | undefined;
  exam: ExamView | undefined;
  error: string | undefined;
  timeUp: boolean;
}) {
  const t = useTranslations("exam");
  const { sessionId, exam, error } = props;
  const box = "mx-4 mt-3 rounded-md border px-3 py-2 text-sm";
  if (exam === undefined) {
    return (
      <p role="status" className={`${box} ${error ? "border-red-300 bg-red-50 text-red-800" : "border-slate-200 text-slate-500"}`}>
        {error ? `${t("loadFailed")}: ${error}` : t("loading")}
      </p>
    );
  }
  if (exam.state === "starting") {
    return (
      <p role="status" data-testid="exam-status" data-state="starting" className={`${box} border-slate-200 bg-slate-50 text-slate-700`}>
        {t("startingNotice", { minutes: exam.durationMinutes })}
      </p>
    );
  }
  if (exam.state === "running") {
    // The clock says 0:00 and the server has not answered "scoring" yet.
    return props.timeUp ? <p className={`${box} border-amber-300 bg-amber-50 text-amber-900`}>{t("timeUp")}</p> : null;
  }
  return (
    <div role="status" data-testid="exam-status" data-state={exam.state} className={`${box} border-sky-300 bg-sky-50 text-sky-950`}>
      <p className="font-semibold">{exam.submittedBy === "time" ? t("submittedByTime") : t("submittedByLearner")}</p>
      {exam.state === "scoring" ? (
        <p className="mt-1">{t("scoring")}</p>
      ) : (
        sessionId && (
          <Link
            href={`/exams/result/${encodeURIComponent(sessionId)}`}
            data-testid="exam-result-link"
            className="mt-1 inline-block font-semibold text-sky-700 underline underline-offset-2 hover:text-sky-900"
          >
            {t("seeResult")}
          </Link>
        )
      )}
    </div>
  );
}

/** Over the terminals once the attempt is submitted: they only show what happened now. */
export function ReadOnlyNotice({ exam }: { exam: ExamView | undefined }) {
  const t = useTranslations("exam");
  if (exam?.state !== "scoring" && exam?.state !== "scored") return null;
  return (
    <div data-testid="terminals-read-only" className="absolute inset-x-0 top-8 z-10 flex justify-center p-3">
      <p role="status" className="rounded-md border border-slate-600 bg-slate-900/95 px-4 py-2 text-sm text-slate-100 shadow-lg">
        {exam.state === "scoring" ? `${t("scoringShort")} ` : ""}
        {t("readOnly")}
      </p>
    </div>
  );
}
