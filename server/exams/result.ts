/**
 * A scored exam as its learner and their instructors see it: total and pass mark, per task the
 * points, each check's verdict now and after the reboot with its output, the solution, and the
 * time spent on it (from the task switches, up to the hand-in). Nothing before it is scored.
 */
import type { Db } from "../db/client";
import { Denied } from "../denied";
import type { ExamSubmitReason } from "../db/generated/client";
import type { Lab } from "../labs/load";
import { scoreExam, type TaskScore } from "./score";

export interface ExamResult {
  state: "scored";
  score: number;
  maxScore: number;
  percent: number;
  passPercent: number;
  passed: boolean;
  submittedAt: string | null;
  submittedBy: ExamSubmitReason | null;
  scoredAt: string | null;
  tasks: (TaskScore & { timeMs: number; solution: string })[];
}

/** Time per task from the switches: each switch's task until the next switch, the last until the hand-in. */
export function timePerTask(switches: readonly { taskId: string; at: Date }[], end: Date | null): Map<string, number> {
  const times = new Map<string, number>();
  switches.forEach((s, i) => {
    const until = switches[i + 1]?.at ?? end;
    if (!until) return;
    times.set(s.taskId, (times.get(s.taskId) ?? 0) + Math.max(0, until.getTime() - s.at.getTime()));
  });
  return times;
}

/** The result of a session's exam; 404 without one, 409 (with its state) until it is scored. */
export async function examResult(db: Db, lab: Lab, sessionId: string): Promise<ExamResult> {
  const attempt = await db.examAttempt.findUnique({
    where: { sessionId },
    include: { results: true, switches: { orderBy: { at: "asc" }, select: { taskId: true, at: true } } },
  });
  if (!attempt) throw new Denied(404, "noSuchExam");
  if (attempt.state !== "scored") throw new Denied(409, "examNotScored");
  const { tasks, score, maxScore } = scoreExam(lab, attempt.results);
  const times = timePerTask(attempt.switches, attempt.submittedAt);
  const solutions = new Map(lab.steps.map((s) => [s.id, s.solution.content]));
  return {
    state: "scored",
    score,
    maxScore,
    percent: maxScore > 0 ? Math.round((score * 1000) / maxScore) / 10 : 0,
    passPercent: attempt.passPercent,
    passed: attempt.passed ?? false,
    submittedAt: attempt.submittedAt?.toISOString() ?? null,
    submittedBy: attempt.submittedBy,
    scoredAt: attempt.scoredAt?.toISOString() ?? null,
    tasks: tasks.map((t) => ({ ...t, timeMs: times.get(t.id) ?? 0, solution: solutions.get(t.id) ?? "" })),
  };
}
