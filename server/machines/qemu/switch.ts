/**
 * A machine set's private L2 network (eth1 of its VMs): one `vde_switch` (Debian vde-switch) with a
 * unix control directory, no root, no host interface. Every set uses the same eth1
 * addresses; separate switches keep them apart.
 */
import fs from "node:fs/promises";
import path from "node:path";
import { requireTools, run } from "./command";
import { isOurProcess, sleep, terminate } from "./processes";

/** Switch ports: one per VM plus headroom for a VM restarted before its old port is released. */
const SWITCH_PORTS = 16;
/** How long vde_switch gets to write its pid file and control socket, in ms. */
const SWITCH_READY_TIMEOUT_MS = 5_000;
const POLL_INTERVAL_MS = 50;
/** How long vde_switch gets to exit after SIGTERM, in ms. */
const SWITCH_TERM_GRACE_MS = 2_000;

export interface SwitchRef {
  /** Control directory: what QEMU's `-netdev vde,sock=` names. */
  socket: string;
  pidFile: string;
  pid: number;
}

/** Starts a switch (daemonised: it outlives this process) and resolves once it is ready. */
export async function startSwitch(dir: string): Promise<SwitchRef> {
  const tools = await requireTools(["vde_switch"]);
  const socket = path.join(path.resolve(dir), "switch");
  const pidFile = path.join(path.resolve(dir), "switch.pid");
  await fs.rm(socket, { recursive: true, force: true });
  await fs.rm(pidFile, { force: true });
  // --rcfile /dev/null: no host-wide /etc/vde2/vde_switch.rc or ~/.vderc changes this switch.
  await run(tools.vde_switch, [
    "--sock",
    socket,
    "--dirmode",
    "0700",
    "--mode",
    "0600",
    "--numports",
    String(SWITCH_PORTS),
    "--rcfile",
    "/dev/null",
    "--daemon",
    "--pidfile",
    pidFile,
  ]);
  const deadline = Date.now() + SWITCH_READY_TIMEOUT_MS;
  for (;;) {
    const pid = Number((await fs.readFile(pidFile, "utf8").catch(() => "")).trim());
    const ctl = await fs.stat(path.join(socket, "ctl")).catch(() => null);
    if (pid > 0 && ctl && (await isOurProcess(pid, socket))) return { socket, pidFile, pid };
    if (Date.now() > deadline) throw new Error(`vde_switch for ${socket} did not come up within ${SWITCH_READY_TIMEOUT_MS} ms`);
    await sleep(POLL_INTERVAL_MS);
  }
}

/** True when `pid` is the vde_switch serving `socket`. */
export function isSwitchAlive(ref: Pick<SwitchRef, "pid" | "socket">): Promise<boolean> {
  return isOurProcess(ref.pid, ref.socket);
}

/** Stops the switch (if `pid` is still it) and removes its control directory. Idempotent. */
export async function stopSwitch(ref: Pick<SwitchRef, "pid" | "socket" | "pidFile">): Promise<void> {
  await terminate(ref.pid, ref.socket, SWITCH_TERM_GRACE_MS);
  await fs.rm(ref.socket, { recursive: true, force: true });
  await fs.rm(ref.pidFile, { force: true });
}
