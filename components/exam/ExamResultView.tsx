"use client";
/**
 * A scored exam: the total against the pass mark, then per task its points, the time spent on
 * it, each check's verdict (a failed one with its output; for a task that must hold across a
 * reboot, also the verdict on the new boot), the solution, and the recording at that task.
 *
 * Tests read `data-passed` on the summary, `data-task-id` on a task and `data-check-id`,
 * `data-outcome`, `data-after-reboot` on a check.
 */
import { useFormatter, useLocale, useTranslations } from "next-intl";
import { formatDuration } from "@/server/i18n/duration";
import { taskReplayUrl, type CheckRun, type ExamResult, type ResultCheck, type ResultTask } from "./exam-api";

export function ExamResultView({ sessionId, result }: { sessionId: string; result: ExamResult }) {
  const t = useTranslations("examResult");
  const format = useFormatter();
  return (
    <div data-testid="exam-result" data-phase="scored" className="mx-auto w-full max-w-4xl space-y-6 p-6">
      <section
        data-testid="exam-summary"
        data-passed={result.passed}
        className={`rounded-lg border px-5 py-4 ${result.passed ? "border-emerald-300 bg-emerald-50" : "border-red-300 bg-red-50"}`}
      >
        <p className={`text-2xl font-bold ${result.passed ? "text-emerald-800" : "text-red-800"}`}>
          {result.passed ? t("passed") : t("failed")}
        </p>
        <p className="mt-2 text-lg">
          {t("score", { n: result.score, max: result.maxScore })}{" "}
          <span className="text-slate-600">{t("percent", { n: Math.round(result.percent * 10) / 10 })}</span>
        </p>
        <p className="mt-1 text-sm text-slate-700">{t("passMark", { n: result.passPercent })}</p>
        <p className="mt-2 text-xs text-slate-500">
          {result.submittedBy === "time"
            ? t("submittedByTime", { date: format.dateTime(new Date(result.submittedAt), "dateTime") })
            : t("submittedAt", { date: format.dateTime(new Date(result.submittedAt), "dateTime") })}
        </p>
      </section>
      <ol className="space-y-4">
        {result.tasks.map((task, i) => (
          <TaskResult key={task.id} number={i + 1} task={task} replayUrl={taskReplayUrl(sessionId, task.machine, task.id)} />
        ))}
      </ol>
    </div>
  );
}

function TaskResult({ number, task, replayUrl }: { number: number; task: ResultTask; replayUrl: string }) {
  const t = useTranslations("examResult");
  const locale = useLocale();
  const full = task.points === task.maxPoints;
  return (
    <li data-task-id={task.id} data-points={task.points} className="rounded-lg border border-slate-200 bg-white">
      <div className="flex flex-wrap items-baseline gap-x-3 gap-y-1 border-b border-slate-100 px-4 py-3">
        <span className="text-xs text-slate-500">{t("taskNumber", { n: number })}</span>
        <h2 className="font-semibold">{task.title}</h2>
        <span
          className={`ml-auto text-sm font-semibold ${full ? "text-emerald-700" : task.points === 0 ? "text-red-700" : "text-amber-700"}`}
        >
          {t("taskPoints", { n: task.points, max: task.maxPoints })}
        </span>
        <span className="w-full text-xs text-slate-500">
          {t("taskMeta", { machine: task.machine, time: formatDuration(task.timeMs / 1000, locale) })}
          {task.requiresReboot && <span className="ml-2 rounded bg-slate-100 px-1.5 py-0.5 text-slate-600">{t("requiresReboot")}</span>}
        </span>
      </div>
      <ul className="divide-y divide-slate-100">
        {task.checks.map((check) => (
          <CheckResult key={check.id} check={check} requiresReboot={task.requiresReboot} />
        ))}
      </ul>
      <div className="space-y-2 border-t border-slate-100 px-4 py-3">
        <details data-testid="solution">
          <summary className="cursor-pointer text-sm font-semibold text-slate-700">{t("solution")}</summary>
          <pre className="mt-2 overflow-x-auto rounded-md bg-slate-900 px-3 py-2 font-mono text-xs leading-5 text-slate-100">
            <code>{task.solution}</code>
          </pre>
        </details>
        {/* A new document: the replay page's CSP allows the player's WebAssembly. */}
        <a
          href={replayUrl}
          target="_blank"
          rel="noopener"
          data-testid="task-replay"
          className="inline-block text-sm text-sky-700 underline underline-offset-2 hover:text-sky-900"
        >
          {t("replay")}
        </a>
      </div>
    </li>
  );
}

/** One check: its points, its verdict now and (for a reboot task) on the new boot, and the output of a verdict that is not a pass. */
function CheckResult({ check, requiresReboot }: { check: ResultCheck; requiresReboot: boolean }) {
  const t = useTranslations("examResult");
  const passed = check.points === check.maxPoints;
  return (
    <li
      data-check-id={check.id}
      data-outcome={check.now?.outcome ?? "none"}
      data-after-reboot={check.afterReboot?.outcome ?? "none"}
      className="px-4 py-2.5"
    >
      <p className="flex items-baseline gap-2 text-sm">
        <span aria-hidden="true" className={passed ? "text-emerald-600" : "text-red-600"}>
          {passed ? "✓" : "✗"}
        </span>
        <span className="min-w-0 flex-1">{check.title}</span>
        <span className="shrink-0 text-xs text-slate-500">{t("checkPoints", { n: check.points, max: check.maxPoints })}</span>
      </p>
      <Verdict label={t("verdictNow")} run={check.now} />
      {requiresReboot && <Verdict label={t("verdictAfterReboot")} run={check.afterReboot} />}
    </li>
  );
}

function Verdict({ label, run }: { label: string; run: CheckRun | null }) {
  const t = useTranslations("examResult");
  const outcome = run?.outcome ?? "none";
  return (
    <div className="mt-1 pl-6 text-xs">
      <p>
        <span className="text-slate-500">{label}</span>
        <span className={`ml-1 ${outcome === "pass" ? "text-emerald-700" : "font-semibold text-red-700"}`}>{t(`outcome.${outcome}`)}</span>
      </p>
      {run && run.outcome !== "pass" && (
        <pre className="mt-1 max-h-48 overflow-auto rounded bg-slate-50 px-2 py-1.5 font-mono leading-5 whitespace-pre-wrap text-slate-800">
          {run.output === "" ? t("noOutput") : run.output}
        </pre>
      )}
    </div>
  );
}
