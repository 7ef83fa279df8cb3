"use client";
/**
 * The exam's tasks, numbered, each with its points and the learner's own marks: "done" and
 * "flagged for review" (toggles, kept on the server). Any task can be opened at any time. These
 * are the learner's notes only: nothing here says whether a task is solved.
 *
 * Tests read `data-task-id`, `data-done`, `data-flagged` and `aria-current` on each task.
 */
import { useTranslations } from "next-intl";
import type { ExamMark, ExamMarks } from "./exam-api";

/** What the list shows of a task. */
export type TaskHeading = { id: string; title: string; machine: string; points: number };

const NO_MARK: ExamMark = { flagged: false, done: false };

export function TaskList(props: {
  tasks: readonly TaskHeading[];
  marks: ExamMarks;
  currentId: string | undefined;
  /** False once the time is over: the marks can no longer change. */
  canMark: boolean;
  onSelect(taskId: string): void;
  onMark(taskId: string, mark: Partial<ExamMark>): void;
}) {
  const t = useTranslations("exam");
  const { tasks, marks, currentId } = props;
  const markOf = (id: string) => marks[id] ?? NO_MARK;
  const done = tasks.filter((task) => markOf(task.id).done).length;
  const flagged = tasks.filter((task) => markOf(task.id).flagged).length;
  const total = tasks.reduce((sum, task) => sum + task.points, 0);
  return (
    <nav aria-label={t("tasks")} className="px-4 py-3">
      <h2 className="mb-2 flex flex-wrap items-baseline gap-x-3 text-sm font-semibold">
        {t("tasks")}
        <span className="text-xs font-normal text-slate-500">
          {t("marksSummary", { done, count: tasks.length, total })}
          {flagged > 0 && ` · ${t("flaggedCount", { n: flagged })}`}
        </span>
      </h2>
      <ol className="space-y-1">
        {tasks.map((task, i) => (
          <TaskRow
            key={task.id}
            number={i + 1}
            task={task}
            mark={markOf(task.id)}
            current={task.id === currentId}
            canMark={props.canMark}
            onSelect={() => props.onSelect(task.id)}
            onMark={(mark) => props.onMark(task.id, mark)}
          />
        ))}
      </ol>
    </nav>
  );
}

function TaskRow(props: {
  number: number;
  task: TaskHeading;
  mark: ExamMark;
  current: boolean;
  canMark: boolean;
  onSelect(): void;
  onMark(mark: Partial<ExamMark>): void;
}) {
  const t = useTranslations("exam");
  const { number, task, mark, current } = props;
  return (
    <li
      data-task-id={task.id}
      data-done={mark.done}
      data-flagged={mark.flagged}
      aria-current={current ? "step" : undefined}
      className={`flex items-center gap-1 rounded-md border ${current ? "border-sky-300 bg-sky-50" : "border-transparent hover:bg-slate-50"}`}
    >
      <button
        type="button"
        onClick={props.onSelect}
        className="flex min-w-0 flex-1 items-baseline gap-2 px-2 py-1.5 text-left text-sm focus-visible:outline-2 focus-visible:outline-sky-500"
      >
        <span className="w-12 shrink-0 text-xs text-slate-500">{t("taskNumber", { n: number })}</span>
        <span className={`min-w-0 flex-1 truncate ${mark.done ? "text-slate-500" : "font-medium"}`}>{task.title}</span>
        <span className="shrink-0 text-xs text-slate-500">{t("points", { n: task.points })}</span>
      </button>
      <MarkToggle
        label={t("markDone", { n: number })}
        pressed={mark.done}
        disabled={!props.canMark}
        tone="emerald"
        onToggle={() => props.onMark({ done: !mark.done })}
      >
        ✓
      </MarkToggle>
      <MarkToggle
        label={t("markFlag", { n: number })}
        pressed={mark.flagged}
        disabled={!props.canMark}
        tone="amber"
        onToggle={() => props.onMark({ flagged: !mark.flagged })}
      >
        ⚑
      </MarkToggle>
    </li>
  );
}

function MarkToggle(props: {
  label: string;
  pressed: boolean;
  disabled: boolean;
  tone: "emerald" | "amber";
  onToggle(): void;
  children: string;
}) {
  const on =
    props.tone === "emerald" ? "border-emerald-400 bg-emerald-100 text-emerald-800" : "border-amber-400 bg-amber-100 text-amber-800";
  return (
    <button
      type="button"
      aria-label={props.label}
      title={props.label}
      aria-pressed={props.pressed}
      disabled={props.disabled}
      onClick={props.onToggle}
      className={`h-7 w-7 shrink-0 rounded border text-sm disabled:cursor-not-allowed disabled:opacity-50 ${
        props.pressed ? on : "border-slate-200 bg-white text-slate-300 hover:text-slate-600"
      }`}
    >
      <span aria-hidden="true">{props.children}</span>
    </button>
  );
}
