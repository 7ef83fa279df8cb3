/**
 * A cohort's results of one exam, for its instructors: one row per learner (their latest sitting
 * in this cohort), per task the points and the time spent, the total and pass/fail; as JSON for
 * the table and as CSV (UTF-8 with a BOM, so Excel opens the Japanese correctly).
 */
import { stringify } from "csv-stringify/sync";
import type { Db } from "../db/client";
import type { ExamState, ExamSubmitReason } from "../db/generated/client";
import { Denied } from "../denied";
import { sessionLab } from "../labs/pinned";
import type { CurrentLabs } from "../labs/versions";
import { timePerTask } from "./result";
import { scoreExam } from "./score";

export interface CohortExamResults {
  slug: string;
  title: string;
  passPercent: number | null;
  tasks: { id: string; title: string; maxPoints: number }[];
  rows: {
    learnerId: string;
    name: string;
    email: string;
    sessionId: string | null;
    state: ExamState | "notStarted";
    score: number | null;
    maxScore: number | null;
    passed: boolean | null;
    submittedAt: string | null;
    submittedBy: ExamSubmitReason | null;
    /** Per task: points (null until scored) and time spent, ms. */
    tasks: Record<string, { points: number | null; timeMs: number }>;
  }[];
}

export async function cohortExamResults(db: Db, labs: CurrentLabs, cohortId: string, slug: string): Promise<CohortExamResults> {
  const cohort = await db.cohort.findUnique({ where: { id: cohortId }, select: { labs: true } });
  if (!cohort?.labs.includes(slug)) throw new Denied(404, "noSuchExam");
  const current = await labs.get(slug).catch(() => null);
  if (!current || current.manifest.mode !== "exam") throw new Denied(404, "noSuchExam");
  const learners = await db.cohortMember.findMany({
    where: { cohortId, role: "learner" },
    select: { user: { select: { id: true, name: true, email: true } } },
    orderBy: { user: { name: "asc" } },
  });
  const attempts = await db.examAttempt.findMany({
    where: { labSlug: slug, session: { cohortId }, learnerId: { in: learners.map((l) => l.user.id) } },
    orderBy: { createdAt: "asc" },
    include: { results: true, switches: { orderBy: { at: "asc" }, select: { taskId: true, at: true } }, session: true },
  });
  const latest = new Map(attempts.map((a) => [a.learnerId, a])); // the last one wins
  const rows = await Promise.all(
    learners.map(async ({ user }) => {
      const attempt = latest.get(user.id);
      if (!attempt) {
        return {
          learnerId: user.id,
          name: user.name,
          email: user.email,
          sessionId: null,
          state: "notStarted" as const,
          score: null,
          maxScore: null,
          passed: null,
          submittedAt: null,
          submittedBy: null,
          tasks: {},
        };
      }
      const { lab } = await sessionLab(db, labs, attempt.session);
      const scored = attempt.state === "scored" ? scoreExam(lab, attempt.results) : null;
      const times = timePerTask(attempt.switches, attempt.submittedAt ?? new Date());
      const tasks = Object.fromEntries(
        lab.steps.map((s) => [s.id, { points: scored?.tasks.find((t) => t.id === s.id)?.points ?? null, timeMs: times.get(s.id) ?? 0 }]),
      );
      return {
        learnerId: user.id,
        name: user.name,
        email: user.email,
        sessionId: attempt.sessionId,
        state: attempt.state,
        score: scored?.score ?? null,
        maxScore: scored?.maxScore ?? null,
        passed: attempt.passed,
        submittedAt: attempt.submittedAt?.toISOString() ?? null,
        submittedBy: attempt.submittedBy,
        tasks,
      };
    }),
  );
  return {
    slug,
    title: current.manifest.title,
    passPercent: current.manifest.exam?.passPercent ?? null,
    tasks: scoreExam(current, []).tasks.map((t) => ({ id: t.id, title: t.title, maxPoints: t.maxPoints })),
    rows,
  };
}

/** Column headings of the CSV, in the caller's language. */
export interface CsvHeadings {
  name: string;
  email: string;
  state: string;
  score: string;
  maxScore: string;
  passed: string;
  submittedAt: string;
  /** "<task title> (points)" */
  taskPoints(title: string): string;
  /** "<task title> (minutes)" */
  taskMinutes(title: string): string;
}

/** The results as CSV: a BOM, CRLF line ends, one row per learner. */
export function resultsCsv(results: CohortExamResults, h: CsvHeadings): string {
  const header = [h.name, h.email, h.state, h.score, h.maxScore, h.passed, h.submittedAt];
  for (const task of results.tasks) header.push(h.taskPoints(task.title), h.taskMinutes(task.title));
  const body = results.rows.map((r) => [
    r.name,
    r.email,
    r.state,
    r.score ?? "",
    r.maxScore ?? "",
    r.passed === null ? "" : r.passed ? "1" : "0",
    r.submittedAt ?? "",
    ...results.tasks.flatMap((t) => [r.tasks[t.id]?.points ?? "", r.tasks[t.id] ? (r.tasks[t.id]!.timeMs / 60_000).toFixed(1) : ""]),
  ]);
  return "\uFEFF" + stringify([header, ...body], { record_delimiter: "windows" });
}
