import { describe, expect, it } from "vitest";
import { frameStats } from "./frames";

const meta = (pid: number, tid: number, name: string) => ({ ph: "M", name: "thread_name", pid, tid, args: { name } });
const task = (pid: number, tid: number, ms: number, wallMs: number, cpuMs: number) => ({
  ph: "X",
  name: "ThreadControllerImpl::RunTask",
  pid,
  tid,
  ts: ms * 1000,
  dur: wallMs * 1000,
  tdur: cpuMs * 1000,
});
const frame = (pid: number, tid: number, endMs: number) => ({
  ph: "X",
  name: "ProxyMain::BeginMainFrame",
  pid,
  tid,
  ts: (endMs - 2) * 1000,
  dur: 2000,
  tdur: 2000,
});

describe("frameStats", () => {
  it("splits each interval between two frames into wall time and the main thread's CPU", () => {
    const events = [
      meta(1, 1, "CrRendererMain"),
      meta(1, 2, "Compositor"),
      frame(1, 1, 0),
      task(1, 1, 10, 20, 5), // a 20 ms task that ran 5 ms: preempted
      task(1, 1, 40, 10, 10),
      task(1, 1, 118, 2, 2), // the frame's own task
      frame(1, 1, 120),
      task(1, 1, 125, 60, 58),
      task(1, 1, 186, 2, 2),
      frame(1, 1, 188),
      // Another thread's tasks and frames are not the page's.
      task(1, 2, 10, 500, 500),
      frame(1, 2, 300),
    ];
    const stats = frameStats({ traceEvents: events });
    expect(stats.frames).toBe(3);
    expect(stats.longestWallMs).toBe(120);
    expect(stats.longestWallCpuMs).toBe(17);
    expect(stats.longestCpuMs).toBe(60);
    expect([stats.overWall50, stats.overCpu50]).toEqual([2, 1]);
    expect(stats.mainCpuMs).toBe(77);
    expect(stats.mainWaitMs).toBe(17);
  });

  it("takes the renderer main thread with the most tasks (the page measured, not an idle tab)", () => {
    const events = [meta(1, 1, "CrRendererMain"), meta(2, 7, "CrRendererMain"), task(1, 1, 0, 1, 1), frame(1, 1, 5), frame(1, 1, 10)];
    for (let i = 0; i < 5; i++) events.push(task(2, 7, i * 10, 3, 1));
    events.push(frame(2, 7, 100), frame(2, 7, 200));
    expect(frameStats(events)).toMatchObject({ frames: 2, longestWallMs: 100, mainCpuMs: 5, mainWaitMs: 10 });
  });

  it("reads nothing from a trace without a renderer", () => {
    expect(frameStats({})).toMatchObject({ frames: 0, longestWallMs: 0, longestCpuMs: 0 });
    expect(frameStats(null).frames).toBe(0);
  });
});
