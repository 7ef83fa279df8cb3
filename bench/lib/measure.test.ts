import { spawn } from "node:child_process";
import { describe, expect, it } from "vitest";
import { schedStat } from "./measure";

describe("schedStat", () => {
  it("reads a thread's time on a CPU and its runs from /proc, growing as it works", async () => {
    const before = await schedStat(process.pid);
    const until = performance.now() + 30;
    while (performance.now() < until); // 30 ms on a CPU
    const after = await schedStat(process.pid);
    expect(after.runMs - before.runMs).toBeGreaterThanOrEqual(25);
    expect(after.runs).toBeGreaterThanOrEqual(before.runs);
    expect(after.waitMs).toBeGreaterThanOrEqual(before.waitMs);
  });

  it("counts a sleeping process's wake-ups, each a run", async () => {
    const child = spawn("sh", ["-c", "for i in 1 2 3 4 5 6 7 8 9 10; do sleep 0.01; done; sleep 5"], { stdio: "ignore" });
    try {
      await new Promise((r) => setTimeout(r, 300));
      const stat = await schedStat(child.pid!);
      expect(Number.isFinite(stat.waitMs)).toBe(true);
      expect(stat.runs).toBeGreaterThanOrEqual(10); // it woke for each sleep's end and each fork
    } finally {
      child.kill("SIGKILL");
    }
  });
});
