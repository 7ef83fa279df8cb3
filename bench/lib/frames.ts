/**
 * A page's frames from a Chromium trace (categories `toplevel` and `cc`), for bench/browser-typing.ts:
 * how long the page went between two rendered frames (wall), and how much of that its main thread
 * ran on a CPU (the tasks' thread time). A long-animation-frame entry gives only the wall time, and
 * on a machine where the browser shares its cores (this one: 2 cores for Chromium's processes, the
 * server, sshd and the holder) most of a long frame can be the main thread waiting for a CPU, not
 * the page's work. Both figures, side by side, tell the two apart.
 */

/** The trace event fields read here (Chrome's JSON trace format; µs). */
interface TraceEvent {
  name?: string;
  ph?: string;
  pid?: number;
  tid?: number;
  ts?: number;
  dur?: number;
  /** Thread (CPU) time of a complete event, µs. */
  tdur?: number;
  args?: { name?: string };
}

export interface FrameStats {
  /** Frames rendered by the page's main thread in the trace. */
  frames: number;
  /** Longest time between the ends of two consecutive frames, ms (wall). */
  longestWallMs: number;
  /** Main-thread CPU within that longest interval, ms. */
  longestWallCpuMs: number;
  /** Most main-thread CPU within any one interval, ms: the page's own longest frame. */
  longestCpuMs: number;
  overWall50: number;
  overCpu50: number;
  /** Main-thread task time on a CPU, and runnable but off it (task wall minus thread time), ms. */
  mainCpuMs: number;
  mainWaitMs: number;
}

const TASK = "ThreadControllerImpl::RunTask";
const FRAME = "ProxyMain::BeginMainFrame";
const LONG_MS = 50;

/** The frames of the renderer main thread that ran the most tasks (the page measured). */
export function frameStats(trace: unknown): FrameStats {
  const events: TraceEvent[] = Array.isArray(trace) ? trace : ((trace as { traceEvents?: TraceEvent[] })?.traceEvents ?? []);
  const mains = new Set<string>();
  for (const e of events) if (e.ph === "M" && e.name === "thread_name" && e.args?.name === "CrRendererMain") mains.add(`${e.pid}/${e.tid}`);
  const tasksOf = new Map<string, TraceEvent[]>();
  const framesOf = new Map<string, TraceEvent[]>();
  for (const e of events) {
    if (e.ph !== "X" || e.ts === undefined || e.dur === undefined) continue;
    const thread = `${e.pid}/${e.tid}`;
    if (!mains.has(thread)) continue;
    const into = e.name === TASK ? tasksOf : e.name === FRAME ? framesOf : undefined;
    if (!into) continue;
    if (!into.has(thread)) into.set(thread, []);
    into.get(thread)!.push(e);
  }
  const main = [...tasksOf.entries()].sort((a, b) => b[1].length - a[1].length)[0]?.[0];
  const tasks = (main && tasksOf.get(main)) || [];
  const frames = ((main && framesOf.get(main)) || []).map((f) => f.ts! + f.dur!).sort((a, b) => a - b);
  tasks.sort((a, b) => a.ts! - b.ts!);

  const stats: FrameStats = {
    frames: frames.length,
    longestWallMs: 0,
    longestWallCpuMs: 0,
    longestCpuMs: 0,
    overWall50: 0,
    overCpu50: 0,
    mainCpuMs: 0,
    mainWaitMs: 0,
  };
  for (const t of tasks) {
    const cpu = t.tdur ?? t.dur!;
    stats.mainCpuMs += cpu / 1000;
    stats.mainWaitMs += Math.max(0, t.dur! - cpu) / 1000;
  }
  let next = 0;
  for (let i = 1; i < frames.length; i++) {
    const [from, to] = [frames[i - 1]!, frames[i]!];
    while (next < tasks.length && tasks[next]!.ts! < from) next++;
    let cpu = 0;
    for (let j = next; j < tasks.length && tasks[j]!.ts! < to; j++) cpu += tasks[j]!.tdur ?? tasks[j]!.dur!;
    const [wallMs, cpuMs] = [(to - from) / 1000, cpu / 1000];
    if (wallMs > stats.longestWallMs) [stats.longestWallMs, stats.longestWallCpuMs] = [wallMs, cpuMs];
    stats.longestCpuMs = Math.max(stats.longestCpuMs, cpuMs);
    if (wallMs > LONG_MS) stats.overWall50++;
    if (cpuMs > LONG_MS) stats.overCpu50++;
  }
  return stats;
}
