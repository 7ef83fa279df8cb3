/**
 * Looking at and ending processes by pid, for QEMU and vde_switch processes this provider started
 * (possibly in an earlier run of the platform). A pid is only signalled after its command line
 * shows it is still the process we started: pids are reused.
 */
import fs from "node:fs/promises";
import path from "node:path";

/** Polling interval while waiting for a process to go away, in ms. */
const GONE_POLL_INTERVAL_MS = 50;
/** How long to wait for a process to vanish after SIGKILL, in ms. */
const KILL_WAIT_MS = 5_000;

/** Alive = exists and is not a zombie (a zombie has exited; only its parent can reap it). */
export async function isAlive(pid: number): Promise<boolean> {
  try {
    const stat = await fs.readFile(`/proc/${pid}/stat`, "utf8");
    const state = stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3);
    return state !== "Z" && state !== "X";
  } catch {
    return false;
  }
}

/** A process's argv, or undefined when it is gone. */
export async function processArgv(pid: number): Promise<string[] | undefined> {
  try {
    const raw = await fs.readFile(`/proc/${pid}/cmdline`, "utf8");
    if (raw === "") return undefined;
    return raw.replace(/\0$/, "").split("\0");
  } catch {
    return undefined;
  }
}

/** Resident memory of a process (VmRSS), in KiB, or undefined when it is gone. */
export async function residentKiB(pid: number): Promise<number | undefined> {
  try {
    const status = await fs.readFile(`/proc/${pid}/status`, "utf8");
    const match = /^VmRSS:\s+(\d+)\s+kB$/m.exec(status);
    return match ? Number(match[1]) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * True when `pid` is alive and its argv contains `marker` as one argument (or as part of one,
 * e.g. a path inside `-pidfile <dir>/qemu.pid`): the test that it is still the process we started.
 */
export async function isOurProcess(pid: number, marker: string): Promise<boolean> {
  if (!(await isAlive(pid))) return false;
  const argv = await processArgv(pid);
  return argv?.some((arg) => arg.includes(marker)) ?? false;
}

export function signal(pid: number, sig: NodeJS.Signals): void {
  try {
    process.kill(pid, sig);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ESRCH") throw error;
  }
}

/** Resolves true once `pid` is gone (or a zombie), false after `timeoutMs`. */
export async function waitGone(pid: number, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (!(await isAlive(pid))) return true;
    if (Date.now() > deadline) return false;
    await sleep(GONE_POLL_INTERVAL_MS);
  }
}

/**
 * Ends a process we own: SIGTERM, then SIGKILL after `graceMs`. Does nothing unless its argv
 * still contains `marker`. Throws if it survives SIGKILL.
 */
export async function terminate(pid: number, marker: string, graceMs: number): Promise<void> {
  if (!(await isOurProcess(pid, marker))) return;
  signal(pid, "SIGTERM");
  if (await waitGone(pid, graceMs)) return;
  if (!(await isOurProcess(pid, marker))) return;
  signal(pid, "SIGKILL");
  if (!(await waitGone(pid, KILL_WAIT_MS))) throw new Error(`process ${pid} survived SIGKILL`);
}

/**
 * Kills every qemu-system/vde_switch process with an argument under `dir` (and passing `filter`),
 * each given `graceMs` between SIGTERM and SIGKILL; returns how many. The last line of defence
 * against leaked processes.
 */
export async function killProcessesUnder(dir: string, graceMs: number, filter: (argv: string[]) => boolean = () => true): Promise<number> {
  const prefix = path.resolve(dir) + "/";
  let killed = 0;
  for (const entry of await fs.readdir("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    const pid = Number(entry);
    if (pid === process.pid) continue;
    const argv = await processArgv(pid);
    if (!argv || !/(^|\/)(qemu-system-[a-z0-9_]+|vde_switch)$/.test(argv[0] ?? "")) continue;
    const marker = argv.find((arg) => arg.includes(prefix));
    if (!marker || !filter(argv)) continue;
    await terminate(pid, marker, graceMs);
    killed++;
  }
  return killed;
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
