/**
 * After a platform restart (QEMU provider): sessions found on disk are served again (their VMs
 * adopted) or removed, and processes and namespaces of removed sessions are ended.
 */
import fs from "node:fs/promises";
import path from "node:path";
import type { RecoveryReport } from "../provider";
import { egressIntact, egressNamespace, egressNamespaceSessions, ensureEgressTable, namespacePids, tearDownEgress } from "./egress";
import { isAlive, processArgv, terminate } from "./processes";
import type { QemuCore, Runtime } from "./session-core";
import { SessionId, listSessionDirs, readState, sessionDir, sessionsDir, writeState, type SessionState } from "./state";
import { isSwitchAlive, stopSwitch } from "./switch";
import { adoptVm, waitForSsh } from "./vm";

/**
 * How long an adopted VM gets to answer SSH after a platform restart, in ms. Only logged: a VM
 * that is mid-reboot or whose sshd a learner broke is still the learner's and stays adopted.
 */
const ADOPT_SSH_TIMEOUT_MS = 30_000;
/** How long a killed VM or switch gets between SIGTERM and SIGKILL, in ms (QEMU exits at once on SIGTERM). */
const KILL_GRACE_MS = 3_000;

export function recoveryOps(core: QemuCore) {
  const { log, runtimes, serialised, endpointOf, watch, teardown } = core;
  const options = { dataDir: core.dataDir };

  async function adoptOrCleanup(opts: { keep?: (sessionId: string) => boolean } = {}): Promise<RecoveryReport> {
    const report: RecoveryReport = { adopted: [], cleaned: [] };
    const ids = (await listSessionDirs(options.dataDir)).filter((id) => !runtimes.has(id));
    // All sessions at once: each may wait for its VMs' SSH, and a restart should not take minutes.
    await Promise.all(
      ids.map((sessionId) =>
        serialised(sessionId, async () => {
          const dir = sessionDir(options.dataDir, sessionId);
          const found = await readState(dir);
          if (
            "state" in found &&
            found.state.phase === "starting" &&
            found.state.creatorPid !== process.pid &&
            (await isAlive(found.state.creatorPid))
          ) {
            // Another process (the CLI, a second platform) is creating this session right now.
            log.info(
              { sessionId, creatorPid: found.state.creatorPid },
              "qemu provider: session is being created by another process; left alone",
            );
            return;
          }
          const kept = opts.keep ? opts.keep(sessionId) : undefined;
          const reason =
            "error" in found
              ? found.error
              : found.state.phase !== "ready" && found.state.phase !== "suspended"
                ? `left in phase ${found.state.phase}`
                : kept === false
                  ? "session has ended"
                  : undefined;
          // A session the platform still counts as live keeps its disks even when its VMs are gone
          // (host reboot, crash): it is adopted as suspended and powered on again on resume.
          const adopted = reason === undefined && "state" in found ? await adopt(dir, found.state, kept === true) : false;
          if (adopted) {
            report.adopted.push(sessionId);
            return;
          }
          log.info({ sessionId, reason: reason ?? "no VM is running" }, "qemu provider: removing leftovers of an earlier run");
          await teardown(sessionId);
          report.cleaned.push(sessionId);
        }),
      ),
    );
    report.adopted.sort();
    report.cleaned.sort();
    // Processes whose session directory is gone altogether.
    const present = new Set(await listSessionDirs(options.dataDir));
    const strays = await killProcessesUnder(sessionsDir(options.dataDir), (argv) => {
      const id = sessionIdInArgv(argv, sessionsDir(options.dataDir));
      return id === undefined || !present.has(id);
    });
    if (strays > 0) log.warn({ strays }, "qemu provider: killed processes of removed sessions");
    // Namespaces (and their veths) of sessions whose directory is gone.
    for (const sessionId of await egressNamespaceSessions(options.dataDir)) {
      if (present.has(sessionId) || runtimes.has(sessionId)) continue;
      const netns = egressNamespace(options.dataDir, sessionId);
      // Only processes of this data directory's sessions (QEMU's argv names its files there).
      for (const pid of await namespacePids(netns))
        await terminate(pid, sessionsDir(options.dataDir) + "/", KILL_GRACE_MS).catch(() => undefined);
      await tearDownEgress(netns);
      log.warn({ sessionId, netns }, "qemu provider: removed the network namespace of a removed session");
    }
    return report;
  }

  /**
   * Serves a session found on disk again. Without a running VM it is adopted as suspended when
   * `keepDisks` (the platform counts it as live), else refused (false). A session whose VMs run
   * but whose network switch is gone is refused: its private network cannot be mended under it.
   */
  async function adopt(dir: string, state: SessionState, keepDisks: boolean): Promise<boolean> {
    const runtime: Runtime = { dir, state, vms: new Map(), destroying: false };
    if (state.phase === "ready") {
      for (const record of state.vms) {
        const vm = record.pid > 0 ? await adoptVm(record.name, record.dir, record.pid) : null;
        if (vm) watch(runtime, vm);
      }
    }
    if (runtime.vms.size === 0) {
      if (!keepDisks) return false;
      if (await isSwitchAlive(state.switch)) await stopSwitch(state.switch);
      state.phase = "suspended";
      await writeState(dir, state);
      runtimes.set(state.sessionId, runtime);
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
    runtimes.set(state.sessionId, runtime);
    const answers = await Promise.all(
      [...runtime.vms.values()].map((vm) =>
        waitForSsh(
          vm,
          endpointOf(
            state,
            state.vms.find((r) => r.name === vm.name)!,
          ),
          ADOPT_SSH_TIMEOUT_MS,
          "up",
        ).then(
          () => `${vm.name}: ssh ok`,
          (error: Error) => `${vm.name}: ${error.message.split("\n")[0]}`,
        ),
      ),
    );
    log.info(
      { sessionId: state.sessionId, machines: answers, stopped: state.vms.length - runtime.vms.size },
      "qemu provider: adopted session",
    );
    return true;
  }

  return { adoptOrCleanup };
}

/** The session id in a process's argv when one argument lies under `sessionsRoot`. */
function sessionIdInArgv(argv: string[], sessionsRoot: string): string | undefined {
  for (const arg of argv) {
    const at = arg.indexOf(sessionsRoot + "/");
    if (at < 0) continue;
    const id = arg.slice(at + sessionsRoot.length + 1).split("/")[0];
    if (id && SessionId.safeParse(id).success) return id;
  }
  return undefined;
}

/**
 * Kills every qemu-system/vde_switch process with an argument under `dir` (and passing `filter`);
 * returns how many. The last line of defence against leaked processes.
 */
export async function killProcessesUnder(dir: string, filter: (argv: string[]) => boolean = () => true): Promise<number> {
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
    await terminate(pid, marker, KILL_GRACE_MS);
    killed++;
  }
  return killed;
}
