"use client";
/**
 * What the learner does during the exam, against the exam API: opening a task (POST …/exam/task,
 * so the server counts time per task and marks the recording), their marks (PUT …/exam/marks,
 * shown at once and replaced by the server's answer) and the submission. A refusal (409: the
 * time is over) asks for the attempt again, which shows the new state.
 */
import { useTranslations } from "next-intl";
import { useEffect, useRef, useState } from "react";
import { graderErrorText } from "@/components/lab/grader-api";
import { postTask, putMark, submitExam, type ExamMark } from "./exam-api";
import type { ExamFeed } from "./useExam";

/**
 * The task shown: the one the learner opened in this page, else the server's current one, else
 * the first. The server hears of each switch while the exam runs, and of the task shown when the
 * time starts (or when the page opens on a running exam that has none yet).
 */
export function useTaskNavigation(
  sessionId: string | undefined,
  feed: ExamFeed,
  taskIds: readonly string[],
  onOpen?: (taskId: string) => void,
) {
  const [chosen, setChosen] = useState<string>();
  const { exam, refresh } = feed;
  const currentId = chosen ?? exam?.currentTaskId ?? taskIds[0];
  const running = exam?.state === "running";

  const tell = (taskId: string) => {
    if (sessionId) postTask(sessionId, taskId).catch(refresh);
  };
  const synced = useRef(false);
  useEffect(() => {
    if (!running || synced.current || currentId === undefined) return;
    synced.current = true;
    if (exam?.currentTaskId !== currentId) tell(currentId);
  });

  function select(taskId: string) {
    if (taskId === currentId) return;
    setChosen(taskId);
    onOpen?.(taskId);
    // Also when the sync above has not run yet (a click in the render the time started): this is the task to tell.
    if (!running) return;
    synced.current = true;
    tell(taskId);
  }
  return { currentId, select };
}

/** Toggles the learner's own marks on a task; `error` says why the last change did not stick. */
export function useMarks(sessionId: string | undefined, feed: ExamFeed) {
  const t = useTranslations("exam");
  const tg = useTranslations("grader");
  const [error, setError] = useState<string>();
  function mark(taskId: string, change: Partial<ExamMark>) {
    const exam = feed.exam;
    if (!sessionId || exam?.state !== "running") return;
    const before = exam.marks[taskId] ?? { flagged: false, done: false };
    feed.applyMarks({ ...exam.marks, [taskId]: { ...before, ...change } });
    setError(undefined);
    putMark(sessionId, taskId, change).then(feed.applyMarks, (err: unknown) => {
      setError(`${t("markFailed")}: ${graderErrorText(err, tg)}`);
      feed.refresh();
    });
  }
  return { mark, error };
}

export type SubmitState = "idle" | "confirm" | "busy" | "error";

/** The submission: asked, confirmed in a dialog, sent; the attempt is then asked for again (it is scoring). */
export function useSubmit(sessionId: string | undefined, feed: ExamFeed) {
  const [state, setState] = useState<SubmitState>("idle");
  const [error, setError] = useState<string>();
  const tg = useTranslations("grader");
  async function confirm() {
    if (!sessionId) return;
    setState("busy");
    try {
      await submitExam(sessionId);
      setState("idle");
    } catch (err) {
      setError(graderErrorText(err, tg));
      setState("error");
    }
    feed.refresh();
  }
  return {
    state,
    error,
    ask: () => setState("confirm"),
    cancel: () => setState("idle"),
    confirm: () => void confirm(),
  };
}
