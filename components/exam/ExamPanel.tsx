"use client";
/**
 * The left side of the exam: where the attempt is (ExamStatus), the task list with the learner's
 * marks, the exam's brief (the lab's lesson, folded once the time runs) and the open task's text,
 * and at the bottom previous / next and Submit. It shows no check result, hint or solution: the
 * page never has them (app/labs/[slug]/page.tsx), and the exam API has none while it runs.
 */
import { useTranslations } from "next-intl";
import { useEffect, useId, useRef, useState } from "react";
import { Lesson, LessonMarkdown } from "@/components/lesson/Lesson";
import type { ExamTask } from "./exam-api";
import { ExamStatus } from "./ExamStatus";
import { SubmitBar } from "./SubmitBar";
import { TaskList } from "./TaskList";
import type { ExamFeed } from "./useExam";
import { useMarks, useSubmit, useTaskNavigation } from "./useExamActions";

type Props = {
  /** Undefined until the session has started. */
  sessionId: string | undefined;
  feed: ExamFeed;
  /** The exam's tasks from the page (the server's list replaces them once loaded). */
  tasks: readonly ExamTask[];
  lessonMarkdown: string;
  /** The countdown reached 0:00. */
  timeUp: boolean;
  /** A task was opened (the workspace shows its machine's terminal). */
  onOpenTask?(task: ExamTask): void;
};

export function ExamPanel({ sessionId, feed, lessonMarkdown, timeUp, onOpenTask, ...props }: Props) {
  const t = useTranslations("exam");
  const { exam } = feed;
  // The server's list once it has one (it may hold the tasks back while the machines start).
  const tasks = exam?.tasks.length ? exam.tasks : props.tasks;
  const ids = tasks.map((task) => task.id);
  const { currentId, select } = useTaskNavigation(sessionId, feed, ids, (id) => {
    const task = tasks.find((x) => x.id === id);
    if (task) onOpenTask?.(task);
  });
  const marks = useMarks(sessionId, feed);
  const submit = useSubmit(sessionId, feed);
  const running = exam?.state === "running" && !timeUp;
  const index = tasks.findIndex((task) => task.id === currentId);
  const current = tasks[index];
  const markList = Object.entries(exam?.marks ?? {}).filter(([id]) => ids.includes(id));
  return (
    <section data-testid="exam-panel" data-state={exam?.state} className="flex h-full flex-col">
      <div className="min-h-0 flex-1 overflow-y-auto">
        <ExamStatus sessionId={sessionId} exam={exam} error={feed.error} timeUp={timeUp && exam?.state === "running"} />
        {marks.error && (
          <p role="alert" className="mx-4 mt-2 text-xs text-red-700">
            {marks.error}
          </p>
        )}
        <TaskList tasks={tasks} marks={exam?.marks ?? {}} currentId={currentId} canMark={running} onSelect={select} onMark={marks.mark} />
        <Brief markdown={lessonMarkdown} foldWhen={exam?.state === "running"} />
        {current && exam !== undefined && exam.state !== "starting" && (
          <article data-testid="exam-task" data-task-id={current.id} className="border-t border-slate-200 px-6 py-4">
            <p className="text-xs text-slate-500">
              {t("taskNumber", { n: index + 1 })} · {t("points", { n: current.points })} · {t("onMachine", { machine: current.machine })}
            </p>
            <h2 className="mt-1 mb-2 text-lg font-semibold">{current.title}</h2>
            <LessonMarkdown markdown={current.textMarkdown} />
          </article>
        )}
      </div>
      <SubmitBar
        onPrevious={index > 0 ? () => select(ids[index - 1]!) : null}
        onNext={index >= 0 && index < ids.length - 1 ? () => select(ids[index + 1]!) : null}
        canSubmit={running && sessionId !== undefined}
        submit={submit}
        marked={{
          done: markList.filter(([, m]) => m.done).length,
          flagged: markList.filter(([, m]) => m.flagged).length,
          count: tasks.length,
        }}
      />
    </section>
  );
}

/**
 * The exam's brief (the lab's lesson): open while the machines start, folded once when the time
 * starts (the task is what matters then), unless the learner has folded or opened it themselves.
 */
function Brief({ markdown, foldWhen }: { markdown: string; foldWhen: boolean }) {
  const t = useTranslations("exam");
  const [open, setOpen] = useState(true);
  const touched = useRef(false);
  const bodyId = useId();
  useEffect(() => {
    if (!foldWhen || touched.current) return;
    touched.current = true;
    setOpen(false);
  }, [foldWhen]);
  if (markdown.trim() === "") return null;
  return (
    <section data-testid="exam-brief" data-open={open} className="border-t border-slate-200">
      <button
        type="button"
        aria-expanded={open}
        aria-controls={bodyId}
        onClick={() => {
          touched.current = true;
          setOpen((o) => !o);
        }}
        className="flex w-full items-center gap-2 px-6 py-2.5 text-left text-sm font-semibold text-slate-600 hover:bg-slate-50 focus-visible:outline-2 focus-visible:-outline-offset-2 focus-visible:outline-sky-500"
      >
        <span aria-hidden="true" className={`text-slate-400 transition ${open ? "rotate-90" : ""}`}>
          ▸
        </span>
        {t("brief")}
        <span className="ml-auto text-xs font-normal text-slate-400">{open ? t("hide") : t("show")}</span>
      </button>
      <div id={bodyId} hidden={!open}>
        <Lesson markdown={markdown} />
      </div>
    </section>
  );
}
