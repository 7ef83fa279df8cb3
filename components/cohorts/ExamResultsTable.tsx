"use client";
/**
 * A cohort's results of one exam, for its instructors: learners × tasks (points and time spent per
 * task), the total, pass/fail and the state of each learner's latest sitting; a summary line and
 * the CSV download. Sorted by clicking a column header (again: the other direction); a learner
 * whose sitting is scored links to their result page.
 */
import { useFormatter, useLocale, useTranslations } from "next-intl";
import Link from "next/link";
import { useMemo, useState } from "react";
import type { CohortExamResults } from "@/server/exams/cohort-results";
import { formatDuration } from "@/server/i18n/duration";

type Row = CohortExamResults["rows"][number];

/** What the table is sorted by: a fixed column or a task's points (`task:<id>`). */
export type SortKey = "name" | "total" | "submittedAt" | `task:${string}`;
export interface Sort {
  key: SortKey;
  dir: "asc" | "desc";
}

/** A row's value in a column; null (not scored, not handed in) sorts last in both directions. */
function sortValue(row: Row, key: SortKey): string | number | null {
  if (key === "name") return row.name;
  if (key === "total") return row.score;
  if (key === "submittedAt") return row.submittedAt ? Date.parse(row.submittedAt) : null;
  return row.tasks[key.slice("task:".length)]?.points ?? null;
}

/** The rows in the order `sort` asks for; ties (and rows without a value) by name. */
export function sortRows(rows: Row[], sort: Sort, locale: string): Row[] {
  const byName = (a: Row, b: Row) => a.name.localeCompare(b.name, locale);
  return [...rows].sort((a, b) => {
    const va = sortValue(a, sort.key);
    const vb = sortValue(b, sort.key);
    if (va === null || vb === null) return va === vb ? byName(a, b) : va === null ? 1 : -1;
    const order = typeof va === "string" ? va.localeCompare(String(vb), locale) : va - (vb as number);
    return (sort.dir === "asc" ? order : -order) || byName(a, b);
  });
}

/** A first click on a column: names and dates A→Z and oldest first, points highest first. */
function firstDir(key: SortKey): Sort["dir"] {
  return key === "name" || key === "submittedAt" ? "asc" : "desc";
}

export function ExamResultsTable({ cohortId, results }: { cohortId: string; results: CohortExamResults }) {
  const t = useTranslations("examResults");
  const locale = useLocale();
  const [sort, setSort] = useState<Sort>({ key: "name", dir: "asc" });
  const rows = useMemo(() => sortRows(results.rows, sort, locale), [results.rows, sort, locale]);
  const onSort = (key: SortKey) =>
    setSort((s) => (s.key === key ? { key, dir: s.dir === "asc" ? "desc" : "asc" } : { key, dir: firstDir(key) }));
  const csv = `/api/cohorts/${encodeURIComponent(cohortId)}/exams/${encodeURIComponent(results.slug)}/results?format=csv`;

  return (
    <div data-testid="exam-results">
      <div className="mt-3 flex flex-wrap items-center gap-4 text-sm">
        <Summary results={results} />
        {/* A document load (a file download), not a client-side navigation. */}
        <a href={csv} download className="ml-auto font-semibold text-sky-700 hover:underline" data-testid="exam-results-csv">
          {t("csv")}
        </a>
      </div>
      {rows.length === 0 ? (
        <p className="mt-6 text-sm text-slate-500">{t("noLearners")}</p>
      ) : (
        <div className="mt-4 overflow-x-auto">
          <table className="w-full border-collapse text-left text-sm" data-testid="exam-results-table">
            <thead className="text-xs text-slate-500">
              <tr>
                <SortHeader sortKey="name" sort={sort} onSort={onSort}>
                  {t("learner")}
                </SortHeader>
                <th className="px-2 py-1 font-medium">{t("state")}</th>
                {results.tasks.map((task) => (
                  <SortHeader key={task.id} sortKey={`task:${task.id}`} sort={sort} onSort={onSort} center>
                    <span className="block">{task.title}</span>
                    <span className="block font-normal">{t("taskMax", { max: task.maxPoints })}</span>
                  </SortHeader>
                ))}
                <SortHeader sortKey="total" sort={sort} onSort={onSort} center>
                  {t("total")}
                </SortHeader>
                <th className="px-2 py-1 font-medium">{t("result")}</th>
                <SortHeader sortKey="submittedAt" sort={sort} onSort={onSort}>
                  {t("submittedAt")}
                </SortHeader>
              </tr>
            </thead>
            <tbody>
              {rows.map((row) => (
                <ResultRow key={row.learnerId} row={row} tasks={results.tasks} />
              ))}
            </tbody>
          </table>
        </div>
      )}
    </div>
  );
}

/** Sat (a sitting started), passed, and the average total of the scored sittings. */
function Summary({ results }: { results: CohortExamResults }) {
  const t = useTranslations("examResults");
  const sat = results.rows.filter((r) => r.state !== "notStarted").length;
  const passed = results.rows.filter((r) => r.passed === true).length;
  const scores = results.rows.flatMap((r) => (r.state === "scored" && r.score !== null ? [r.score] : []));
  const max = results.tasks.reduce((sum, task) => sum + task.maxPoints, 0);
  const average = scores.length > 0 ? Math.round((scores.reduce((a, b) => a + b, 0) / scores.length) * 10) / 10 : null;
  const parts = [
    t("summarySat", { done: sat, total: results.rows.length }),
    t("summaryPassed", { count: passed }),
    average === null ? t("summaryNoAverage") : t("summaryAverage", { n: average, max }),
    ...(results.passPercent === null ? [] : [t("passMark", { n: results.passPercent })]),
  ];
  return (
    <p className="text-slate-700" data-testid="exam-results-summary">
      {parts.join(" ・ ")}
    </p>
  );
}

function SortHeader(props: { sortKey: SortKey; sort: Sort; onSort(key: SortKey): void; center?: boolean; children: React.ReactNode }) {
  const active = props.sort.key === props.sortKey;
  const dir = active ? props.sort.dir : null;
  return (
    <th
      aria-sort={dir === "asc" ? "ascending" : dir === "desc" ? "descending" : "none"}
      className={`px-2 py-1 font-medium ${props.center ? "text-center" : ""}`}
      data-sort-key={props.sortKey}
    >
      <button
        type="button"
        onClick={() => props.onSort(props.sortKey)}
        className={`inline-flex items-center gap-1 hover:text-sky-700 ${active ? "text-slate-900" : ""}`}
      >
        <span>{props.children}</span>
        <span aria-hidden="true" className="w-3 text-[10px]">
          {dir === "asc" ? "▲" : dir === "desc" ? "▼" : ""}
        </span>
      </button>
    </th>
  );
}

const STATE_LABEL = {
  notStarted: "notStarted",
  starting: "inProgress",
  running: "inProgress",
  scoring: "scoring",
  scored: "scored",
} as const satisfies Record<Row["state"], string>;

function ResultRow({ row, tasks }: { row: Row; tasks: CohortExamResults["tasks"] }) {
  const t = useTranslations("examResults");
  const locale = useLocale();
  const format = useFormatter();
  const linked = row.state === "scored" && row.sessionId !== null;
  return (
    <tr className="border-t border-slate-200 bg-white" data-learner={row.email} data-state={row.state}>
      <td className="px-2 py-1.5">
        <div className="font-medium">
          {linked ? (
            <Link href={`/exams/result/${encodeURIComponent(row.sessionId!)}`} className="text-sky-700 hover:underline">
              {row.name}
            </Link>
          ) : (
            row.name
          )}
        </div>
        <div className="text-xs text-slate-500">{row.email}</div>
      </td>
      <td className="px-2 py-1.5 text-xs whitespace-nowrap" data-testid="exam-state">
        {t(`states.${STATE_LABEL[row.state]}`)}
      </td>
      {tasks.map((task) => {
        const cell = row.tasks[task.id];
        return (
          <td key={task.id} className="px-2 py-1.5 text-center whitespace-nowrap" data-task={task.id}>
            <div data-testid="task-points">{cell?.points == null ? "—" : cell.points}</div>
            {cell && cell.timeMs > 0 && (
              <div className="text-[10px] text-slate-500" data-testid="task-time">
                {formatDuration(cell.timeMs / 1000, locale)}
              </div>
            )}
          </td>
        );
      })}
      <td className="px-2 py-1.5 text-center font-semibold whitespace-nowrap" data-testid="exam-total">
        {row.score === null || row.maxScore === null ? "—" : t("points", { n: row.score, max: row.maxScore })}
      </td>
      <td className="px-2 py-1.5" data-testid="exam-passed">
        {row.passed !== null && (
          <span
            className={`rounded px-1.5 py-0.5 text-xs font-semibold ${row.passed ? "bg-emerald-100 text-emerald-800" : "bg-red-100 text-red-800"}`}
          >
            {row.passed ? t("passed") : t("failed")}
          </span>
        )}
      </td>
      <td className="px-2 py-1.5 text-xs whitespace-nowrap text-slate-600">
        {row.submittedAt ? format.dateTime(new Date(row.submittedAt), "dateTime") : "—"}
        {row.submittedBy === "time" && <span className="ml-1 text-amber-700">({t("submittedByTime")})</span>}
      </td>
    </tr>
  );
}
