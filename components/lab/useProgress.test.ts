import { describe, expect, it } from "vitest";
import type { Progress } from "@/server/grader/progress";
import { isOlder } from "./useProgress";

function progress(over: Partial<Progress> & { done?: number }): Progress {
  const done = over.done ?? 0;
  const ids = ["a", "b", "c"];
  return {
    sessionId: "s1",
    labVersion: "v1",
    steps: ids.map((id, i) => ({ id, title: id, state: i < done ? "done" : i === done ? "current" : "locked" })),
    currentStepId: ids[done] ?? null,
    lastCheck: null,
    rebootProof: null,
    hintsRevealed: [],
    completed: done === ids.length,
    ...over,
  };
}

const check = (at: string) => ({ stepId: "a", outcome: "fail" as const, trigger: "manual" as const, output: "", at, durationMs: 5 });

describe("isOlder", () => {
  it("refuses progress with fewer steps done, whatever its check time", () => {
    const shown = progress({ done: 1, lastCheck: check("2026-01-01T00:00:01.000Z") });
    expect(isOlder(progress({ done: 0, lastCheck: check("2026-01-01T00:00:02.000Z") }), shown)).toBe(true);
    expect(isOlder(progress({ done: 2 }), shown)).toBe(false);
  });

  it("refuses fewer revealed hints, and an older check at the same step", () => {
    const shown = progress({ hintsRevealed: ["a"], lastCheck: check("2026-01-01T00:00:05.000Z") });
    expect(isOlder(progress({ lastCheck: check("2026-01-01T00:00:06.000Z") }), shown)).toBe(true);
    expect(isOlder(progress({ hintsRevealed: ["a"], lastCheck: check("2026-01-01T00:00:04.000Z") }), shown)).toBe(true);
    expect(isOlder(progress({ hintsRevealed: ["a"], lastCheck: check("2026-01-01T00:00:05.000Z") }), shown)).toBe(false);
    expect(isOlder(progress({ hintsRevealed: ["a"], lastCheck: check("2026-01-01T00:00:07.000Z") }), shown)).toBe(false);
  });

  it("takes anything from another session", () => {
    expect(isOlder(progress({ sessionId: "s2" }), progress({ done: 3 }))).toBe(false);
  });
});
