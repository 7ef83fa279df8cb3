/**
 * What the lab page hands the browser of an exam (`mode: exam` in lab.yaml): its steps as tasks,
 * with only what the learner may see. A task's checks, hint and solution stay on the server.
 */
import type { ExamTask } from "@/components/exam/exam-api";
import type { Lab } from "@/server/labs/load";

/**
 * The exam's tasks, or null for a lab that is not an exam. `mode` and a step's `points` are read
 * through a widened type until this branch's lab schema has them (a step without points is worth 1).
 */
export function examTasks(lab: Lab): ExamTask[] | null {
  if ((lab.manifest as { mode?: string }).mode !== "exam") return null;
  return lab.steps.map((step) => ({
    id: step.id,
    title: step.title,
    machine: step.machine,
    points: (step as { points?: number }).points ?? 1,
    textMarkdown: step.textMarkdown,
  }));
}
