/**
 * What the lab page hands the browser of an exam (`mode: exam` in lab.yaml): its steps as tasks,
 * with only what the learner may see. A task's checks, hint and solution stay on the server.
 */
import type { ExamTask } from "@/components/exam/exam-api";
import type { Lab } from "@/server/labs/load";

/** The exam's tasks, or null for a lab that is not an exam (a step stored before points is worth 1). */
export function examTasks(lab: Lab): ExamTask[] | null {
  if (lab.manifest.mode !== "exam") return null;
  return lab.steps.map((step) => ({
    id: step.id,
    title: step.title,
    machine: step.machine,
    points: step.points ?? 1,
    textMarkdown: step.textMarkdown,
  }));
}
