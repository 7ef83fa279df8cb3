import { spawn } from "node:child_process";
import fs from "node:fs/promises";
import { describe, expect, it } from "vitest";
import { schedStat } from "./measure";

/** USER_HZ: /proc/<pid>/task/<tid>/stat times are in 1/100 s on Linux. */
const TICK_MS = 10;

/** The kernel's other account of one thread's CPU time: utime + stime in ticks, from its own stat file. */
async function threadTicks(pid: number, tid = pid): Promise<number> {
  const stat = await fs.readFile(`/proc/${pid}/task/${tid}/stat`, "utf8");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return Number(fields[11]) + Number(fields[12]); // utime, stime (fields 14, 15)
}

describe("schedStat", () => {
  it("reads a thread's time on a CPU and its runs from /proc, growing as it works", async () => {
    // Work until the kernel's tick account of this thread has grown by five ticks (CPU time, not
    // wall time: a busy machine only makes it take longer), then schedstat must show as much.
    const ticks = 5;
    const before = await schedStat(process.pid);
    const from = await threadTicks(process.pid);
    while ((await threadTicks(process.pid)) - from < ticks) {
      const until = performance.now() + TICK_MS;
      while (performance.now() < until); // on a CPU, in slices of a tick between two reads
    }
    const after = await schedStat(process.pid);
    // Ticks are sampled at each timer interrupt (a thread is charged the whole tick it was caught
    // running in), so they are no exact measure: on a crowded machine five ticks held as little as
    // two ticks' run time. schedstat counts exactly; it must show at least one tick's worth.
    expect(after.runMs - before.runMs).toBeGreaterThanOrEqual(TICK_MS);
    expect(after.runs).toBeGreaterThanOrEqual(before.runs);
    expect(after.waitMs).toBeGreaterThanOrEqual(before.waitMs);
  });

  it("counts a sleeping process's wake-ups, each a run", async () => {
    const child = spawn("sh", ["-c", "for i in 1 2 3 4 5 6 7 8 9 10; do sleep 0.01; done; sleep 5"], { stdio: "ignore" });
    try {
      // It wakes for each sleep's end and each fork: ten at least, however slow the machine.
      await expect.poll(async () => (await schedStat(child.pid!)).runs, { timeout: 10_000 }).toBeGreaterThanOrEqual(10);
      expect(Number.isFinite((await schedStat(child.pid!)).waitMs)).toBe(true);
    } finally {
      child.kill("SIGKILL");
    }
  });
});
