"use client";
/**
 * The bottom of the exam panel: previous / next task and the Submit button, which asks first in a
 * dialog (with how many tasks the learner marked done or flagged: a last look before it is final).
 */
import { useTranslations } from "next-intl";
import { useEffect, useId, useRef } from "react";
import type { SubmitState } from "./useExamActions";

export function SubmitBar(props: {
  /** Null for none (the first task has no previous one). */
  onPrevious: (() => void) | null;
  onNext: (() => void) | null;
  canSubmit: boolean;
  submit: { state: SubmitState; error: string | undefined; ask(): void; cancel(): void; confirm(): void };
  marked: { done: number; flagged: number; count: number };
}) {
  const t = useTranslations("exam");
  const { submit } = props;
  const navButton =
    "rounded-md border border-slate-300 bg-white px-3 py-1.5 text-xs text-slate-700 hover:bg-slate-100 disabled:cursor-not-allowed disabled:opacity-40";
  return (
    <div className="flex shrink-0 items-center gap-2 border-t border-slate-200 bg-slate-50 px-4 py-3">
      <button type="button" className={navButton} disabled={!props.onPrevious} onClick={() => props.onPrevious?.()}>
        ← {t("previous")}
      </button>
      <button type="button" className={navButton} disabled={!props.onNext} onClick={() => props.onNext?.()}>
        {t("next")} →
      </button>
      {submit.state === "error" && submit.error && (
        <span role="alert" className="min-w-0 truncate text-xs text-red-700">
          {t("submitFailed")}: {submit.error}
        </span>
      )}
      <button
        type="button"
        data-testid="exam-submit"
        disabled={!props.canSubmit || submit.state === "busy"}
        aria-busy={submit.state === "busy"}
        onClick={submit.ask}
        className="ml-auto rounded-md bg-sky-600 px-4 py-2 text-sm font-semibold text-white shadow-sm hover:bg-sky-700 focus-visible:outline-2 focus-visible:outline-offset-2 focus-visible:outline-sky-600 disabled:cursor-not-allowed disabled:bg-sky-300"
      >
        {submit.state === "busy" ? t("submitting") : t("submit")}
      </button>
      {submit.state === "confirm" && <ConfirmSubmit marked={props.marked} onCancel={submit.cancel} onConfirm={submit.confirm} />}
    </div>
  );
}

function ConfirmSubmit(props: { marked: { done: number; flagged: number; count: number }; onCancel(): void; onConfirm(): void }) {
  const t = useTranslations("exam");
  const titleId = useId();
  const cancelRef = useRef<HTMLButtonElement>(null);
  useEffect(() => cancelRef.current?.focus(), []);
  return (
    <div
      className="fixed inset-0 z-50 flex items-center justify-center bg-slate-900/50 p-4"
      onKeyDown={(e) => e.key === "Escape" && props.onCancel()}
    >
      <div
        role="dialog"
        aria-modal="true"
        aria-labelledby={titleId}
        data-testid="submit-dialog"
        className="w-full max-w-md rounded-lg bg-white p-5 shadow-xl"
      >
        <h2 id={titleId} className="text-base font-semibold">
          {t("confirmTitle")}
        </h2>
        <p className="mt-2 text-sm text-slate-700">{t("confirmBody")}</p>
        <p className="mt-2 text-sm text-slate-700">
          {t("confirmMarks", { done: props.marked.done, count: props.marked.count, n: props.marked.flagged })}
        </p>
        <div className="mt-5 flex justify-end gap-2">
          <button
            ref={cancelRef}
            type="button"
            onClick={props.onCancel}
            className="rounded-md border border-slate-300 px-3 py-1.5 text-sm hover:bg-slate-50"
          >
            {t("confirmCancel")}
          </button>
          <button
            type="button"
            data-testid="submit-confirm"
            onClick={props.onConfirm}
            className="rounded-md bg-sky-600 px-3 py-1.5 text-sm font-semibold text-white hover:bg-sky-700"
          >
            {t("confirmSubmit")}
          </button>
        </div>
      </div>
    </div>
  );
}
