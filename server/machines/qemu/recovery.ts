/**
 * After a platform restart (QEMU provider): machine sets found on disk are served again (their
 * VMs adopted) or removed, and processes and namespaces of removed sets are ended.
 */
import type { RecoveryReport } from "../provider";
import { egressIntact, egressNamespace, egressNamespaceSets, ensureEgressTable, namespacePids, tearDownEgress } from "./egress";
import type { MachineSet } from "./machine-set";
import { isAlive, killProcessesUnder, terminate } from "./processes";
import { KILL_GRACE_MS, type QemuRuntime } from "./runtime";
import { SetId, listSetDirs, readState, setDir, setsDir, writeState, type SetState } from "./state";
import { isSwitchAlive, stopSwitch } from "./switch";
import { adoptVm } from "./vm";

export interface RecoveryOptions {
  /** Whether a set (by id) belongs to a live session; false: it is removed (unless a spare). */
  keep?: (sessionId: string) => boolean;
  /** Whether ready warm-pool spares are kept; default true (false: removed like every other set). */
  spares?: boolean;
}

/**
 * Every set on disk that this process does not serve yet: adopted when it is ready or suspended
 * and `keep` does not refuse it (a warm-pool spare: unless `spares` is false), else removed; then
 * processes and namespaces whose set is gone.
 */
export async function adoptOrCleanup(runtime: QemuRuntime, opts: RecoveryOptions = {}): Promise<RecoveryReport> {
  const report: RecoveryReport = { adopted: [], cleaned: [] };
  const ids = (await listSetDirs(runtime.dataDir)).filter((id) => !runtime.sets.has(id));
  // All sets at once: each may wait for its VMs' SSH, and a restart should not take minutes.
  await Promise.all(ids.map((setId) => runtime.serialised(setId, () => recoverSet(runtime, setId, opts, report))));
  report.adopted.sort();
  report.cleaned.sort();
  report.spares?.sort();
  await removeStrays(runtime);
  return report;
}

/** One set found on disk: left alone while another process creates it, else adopted or removed (noted in `report`). */
async function recoverSet(runtime: QemuRuntime, setId: string, opts: RecoveryOptions, report: RecoveryReport): Promise<void> {
  const { keep } = opts;
  const { log } = runtime;
  const dir = setDir(runtime.dataDir, setId);
  const found = await readState(dir);
  if (
    "state" in found &&
    found.state.phase === "starting" &&
    found.state.creatorPid !== process.pid &&
    (await isAlive(found.state.creatorPid))
  ) {
    // Another process (the CLI, a second platform) is creating this set right now.
    log.info(
      { sessionId: setId, creatorPid: found.state.creatorPid },
      "qemu provider: session is being created by another process; left alone",
    );
    return;
  }
  const kept = keep ? keep(setId) : undefined;
  // A warm-pool spare nobody was given is no session's: kept while its VMs run (below).
  const spare = opts.spares !== false && "state" in found && found.state.spare !== undefined && kept !== true;
  const reason =
    "error" in found
      ? found.error
      : found.state.phase !== "ready" && found.state.phase !== "suspended"
        ? `left in phase ${found.state.phase}`
        : kept === false && !spare
          ? "session has ended"
          : undefined;
  // A set the platform still counts as live keeps its disks even when its VMs are gone (host
  // reboot, crash): it is adopted as suspended and powered on again on resume.
  const adopted = reason === undefined && "state" in found ? await adopt(runtime, dir, found.state, kept === true && !spare) : false;
  if (adopted) {
    report.adopted.push(setId);
    if (spare) (report.spares ??= []).push(setId);
    return;
  }
  log.info({ sessionId: setId, reason: reason ?? "no VM is running" }, "qemu provider: removing leftovers of an earlier run");
  await runtime.teardown(setId);
  report.cleaned.push(setId);
}

/** Processes and network namespaces (with their veths) whose set directory is gone altogether. */
async function removeStrays(runtime: QemuRuntime): Promise<void> {
  const { dataDir, log } = runtime;
  const present = new Set(await listSetDirs(dataDir));
  const strays = await killProcessesUnder(setsDir(dataDir), KILL_GRACE_MS, (argv) => {
    const id = setIdInArgv(argv, setsDir(dataDir));
    return id === undefined || !present.has(id);
  });
  if (strays > 0) log.warn({ strays }, "qemu provider: killed processes of removed sessions");
  for (const setId of await egressNamespaceSets(dataDir)) {
    if (present.has(setId) || runtime.sets.has(setId)) continue;
    const netns = egressNamespace(dataDir, setId);
    // Only processes of this data directory's sets (QEMU's argv names its files there).
    for (const pid of await namespacePids(netns)) await terminate(pid, setsDir(dataDir) + "/", KILL_GRACE_MS).catch(() => undefined);
    await tearDownEgress(netns);
    log.warn({ sessionId: setId, netns }, "qemu provider: removed the network namespace of a removed session");
  }
}

/**
 * Serves a set found on disk again. Without a running VM it is adopted as suspended when
 * `keepDisks` (the platform counts it as live), else refused (false). A set whose VMs run but
 * whose network switch is gone is refused: its private network cannot be mended under it.
 */
async function adopt(runtime: QemuRuntime, dir: string, state: SetState, keepDisks: boolean): Promise<boolean> {
  const { log } = runtime;
  const set: MachineSet = { dir, state, vms: new Map(), destroying: false };
  if (state.phase === "ready") {
    for (const record of state.vms) {
      const vm = record.pid > 0 ? await adoptVm(record.name, record.dir, record.pid) : null;
      if (vm) runtime.watch(set, vm);
    }
  }
  if (set.vms.size === 0) {
    if (!keepDisks) return false;
    if (await isSwitchAlive(state.switch)) await stopSwitch(state.switch);
    state.phase = "suspended";
    await writeState(dir, state);
    runtime.sets.set(state.sessionId, set);
    log.info({ sessionId: state.sessionId }, "qemu provider: adopted session with no running VM as suspended (disks kept)");
    return true;
  }
  if (!(await isSwitchAlive(state.switch))) {
    log.warn({ sessionId: state.sessionId }, "qemu provider: VMs run but the network switch is gone");
    return false;
  }
  if (state.internet) {
    if (!state.egress || !(await egressIntact(state.egress))) {
      log.warn({ sessionId: state.sessionId }, "qemu provider: VMs run but the session's network namespace is gone");
      return false;
    }
    await ensureEgressTable(log);
  }
  runtime.sets.set(state.sessionId, set);
  // No SSH probe here: right after a restart every open page's terminals log in to these VMs at
  // once, and under TCG each extra SSH handshake in a one-vCPU guest delays theirs. A VM that is
  // mid-reboot or whose sshd a learner broke is still the learner's and stays adopted anyway.
  log.info(
    { sessionId: state.sessionId, running: set.vms.size, stopped: state.vms.length - set.vms.size },
    "qemu provider: adopted session",
  );
  return true;
}

/**
 * A ready spare an earlier or another process made, served by this one from now on (its VMs
 * must all run: a spare with a VM gone is of no use, and the next recovery removes it).
 */
export async function adoptSpare(runtime: QemuRuntime, dir: string, state: SetState): Promise<boolean> {
  const running = await Promise.all(state.vms.map((r) => (r.pid > 0 ? isAlive(r.pid) : false)));
  if (!running.every(Boolean)) return false;
  return adopt(runtime, dir, state, false);
}

/** The set id in a process's argv when one argument lies under `setsRoot`. */
function setIdInArgv(argv: string[], setsRoot: string): string | undefined {
  for (const arg of argv) {
    const at = arg.indexOf(setsRoot + "/");
    if (at < 0) continue;
    const id = arg.slice(at + setsRoot.length + 1).split("/")[0];
    if (id && SetId.safeParse(id).success) return id;
  }
  return undefined;
}
