/**
 * An exam's points from its recorded check results: a check scores its points when it passed
 * now and, for a task that must hold after a reboot (verifyByReboot), also on the new boot. A
 * check with no result (not run yet, or the scoring was cut short) scores nothing. Pure: the
 * scoring (scoring.ts) and the result page (result.ts) both read points from here.
 */
import type { CheckOutcome, ExamPhase } from "../db/generated/client";
import { WHOLE_TASK_CHECK, type Lab, type LoadedStep } from "../labs/load";

export interface CheckResultRow {
  taskId: string;
  checkId: string;
  phase: ExamPhase;
  outcome: CheckOutcome;
  output: string;
  durationMs: number;
}

export interface CheckVerdict {
  outcome: CheckOutcome;
  output: string;
  durationMs: number;
}

export interface TaskScore {
  id: string;
  title: string;
  machine: string;
  points: number;
  maxPoints: number;
  requiresReboot: boolean;
  checks: { id: string; title: string; points: number; maxPoints: number; now: CheckVerdict | null; afterReboot: CheckVerdict | null }[];
}

/** The weighted checks of a task (check.sh worth all its points when it declares none). */
export function scoringChecks(step: LoadedStep): { id: string; title: string; points: number }[] {
  return step.scoring ?? [{ id: WHOLE_TASK_CHECK, title: step.title, points: step.points ?? 1 }];
}

export function scoreExam(
  lab: Pick<Lab, "steps">,
  results: readonly CheckResultRow[],
): { tasks: TaskScore[]; score: number; maxScore: number } {
  const byKey = new Map(results.map((r) => [`${r.taskId}\u0000${r.checkId}\u0000${r.phase}`, r]));
  const verdict = (taskId: string, checkId: string, phase: ExamPhase): CheckVerdict | null => {
    const row = byKey.get(`${taskId}\u0000${checkId}\u0000${phase}`);
    return row ? { outcome: row.outcome, output: row.output, durationMs: row.durationMs } : null;
  };
  const tasks = lab.steps.map((step): TaskScore => {
    const checks = scoringChecks(step).map((check) => {
      const now = verdict(step.id, check.id, "now");
      const afterReboot = step.verifyByReboot ? verdict(step.id, check.id, "afterReboot") : null;
      const holds = now?.outcome === "pass" && (!step.verifyByReboot || afterReboot?.outcome === "pass");
      return { id: check.id, title: check.title, points: holds ? check.points : 0, maxPoints: check.points, now, afterReboot };
    });
    return {
      id: step.id,
      title: step.title,
      machine: step.machine,
      points: checks.reduce((sum, c) => sum + c.points, 0),
      maxPoints: checks.reduce((sum, c) => sum + c.maxPoints, 0),
      requiresReboot: step.verifyByReboot,
      checks,
    };
  });
  return { tasks, score: tasks.reduce((sum, t) => sum + t.points, 0), maxScore: tasks.reduce((sum, t) => sum + t.maxPoints, 0) };
}

/** Passed: at least `passPercent` of the points (66 % of 100 points needs 66). */
export function passes(score: number, maxScore: number, passPercent: number): boolean {
  return maxScore > 0 && score * 100 >= passPercent * maxScore;
}
