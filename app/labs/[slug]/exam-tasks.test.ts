/** An exam's tasks as the lab page hands them to the browser: never a check, hint or solution. */
import { describe, expect, it } from "vitest";
import type { Lab, LoadedStep } from "@/server/labs/load";
import { examTasks } from "./exam-tasks";

function step(id: string, extra: Record<string, unknown> = {}): LoadedStep {
  return {
    id,
    title: `Task ${id}`,
    machine: "node01",
    timeoutSeconds: 30,
    verifyByReboot: false,
    textMarkdown: `Do ${id}.`,
    hintMarkdown: "SECRET HINT",
    check: { file: `labs/x/steps/${id}/check.sh`, content: "SECRET CHECK" },
    solution: { file: `labs/x/steps/${id}/solution.sh`, content: "SECRET SOLUTION" },
    shortcuts: [],
    alternatives: [],
    ...extra,
  } as unknown as LoadedStep;
}

function lab(manifest: Record<string, unknown>, steps: LoadedStep[]): Lab {
  return { slug: "x", manifest: { title: "X", ...manifest }, lessonMarkdown: "", dir: "/labs/x", steps, setup: {}, checkLib: "" } as unknown as Lab;
}

describe("examTasks", () => {
  it("gives an exam's tasks with their points and text only", () => {
    const tasks = examTasks(lab({ mode: "exam", exam: { durationMinutes: 120, passPercent: 66 } }, [step("a", { points: 7 }), step("b")]));
    expect(tasks).toEqual([
      { id: "a", title: "Task a", machine: "node01", points: 7, textMarkdown: "Do a." },
      { id: "b", title: "Task b", machine: "node01", points: 1, textMarkdown: "Do b." },
    ]);
    expect(JSON.stringify(tasks)).not.toContain("SECRET");
  });

  it("is null for a lab that is not an exam", () => {
    expect(examTasks(lab({}, [step("a")]))).toBeNull();
    expect(examTasks(lab({ mode: "lab" }, [step("a")]))).toBeNull();
  });
});
