/**
 * One lab VM: a QEMU process booting the image's kernel directly, its disk a qcow2 overlay on the
 * read-only base, eth0 on QEMU's user-mode NAT (SSH forwarded from a loopback port; the guest
 * itself reaches nothing through it: `ETH0_NETDEV`; an internet lab's VM runs in its machine set's
 * network namespace instead: `ETH0_NETDEV_INTERNET`, egress.ts), eth1 on the set's vde_switch, its
 * identity in a fw_cfg seed. The QEMU process outlives the Node process
 * that started it (the platform adopts it after a restart); a reboot inside the guest keeps the
 * same process, a poweroff ends it.
 *
 * Per-VM directory:
 *   overlay.qcow2  the VM's disk (writes), backed by the image's base.qcow2
 *   seed           fw_cfg seed (seed.ts); holds the VM's private host key, mode 0600
 *   qmp.sock       QMP monitor
 *   serial.log     the guest's console (kernel, systemd)
 *   qemu.log       QEMU's own stdout/stderr
 *   qemu.pid       written by QEMU; its path in QEMU's argv marks the process as this VM's
 */
import { spawn } from "node:child_process";
import { closeSync, openSync } from "node:fs";
import fs from "node:fs/promises";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { HostKeyMismatchError } from "../../ssh/connect";
import { connectSsh, type SshEndpoint } from "../../ssh/connect";
import { requireTools, run } from "./command";
import { inNamespace } from "./egress";
import type { BuiltImage } from "./image";
import { isAlive, isOurProcess, signal, sleep, terminate, waitGone } from "./processes";
import { qmpCommand } from "./qmp";
import { READY_LINE_PREFIX } from "../images/guest";
import { SEED_FW_CFG_NAME } from "../images/seed";

export type Accel = "tcg" | "kvm";

/**
 * eth0's MAC, the same on every VM: QEMU's slirp DHCP then hands each VM 10.0.2.15 (the course
 * shows every first NIC with the same address), and again after a reboot, where the hostfwd
 * rule's default guest address keeps matching.
 */
export const ETH0_MAC = "52:54:00:12:34:56";
/**
 * eth0's netdev options besides the SSH forward. `restrict=on` is the lab network's default deny:
 * slirp drops every packet the guest starts (TCP, UDP, ICMP) to any address — 10.0.2.2 (the
 * host's loopback: the app, PostgreSQL, other sets' SSH forwards), 10.0.2.3 (DNS), the host's
 * LAN, link-local, the internet — while its built-in DHCP still answers (every eth0 still gets
 * 10.0.2.15) and the host's `hostfwd` connections to the guest still come in. The set's
 * machines talk to each other on eth1 only. Proven from inside VMs by qemu.vm.test.ts.
 */
export const ETH0_NETDEV = "user,id=n0,restrict=on";
/**
 * eth0 of a VM whose lab asks for the internet (egress.ts): unrestricted slirp, but the QEMU
 * process runs in the set's network namespace, so slirp's sockets leave through the
 * namespace's veth and the host's `inet labdeck` nftables rules (no host, no private ranges);
 * 10.0.2.2 is the namespace's loopback, where nothing listens. No IPv6 on eth0 (the namespace has
 * none either): the policy is written for IPv4.
 */
export const ETH0_NETDEV_INTERNET = "user,id=n0,ipv6=off";
/** Translation-block cache under TCG, MiB: QEMU's default (1 GiB) inflates RSS for no speed gain on a small guest. */
const TCG_TB_SIZE_MIB = 128;
/**
 * Guest CPU under TCG: every feature QEMU emulates (x86-64-v2 and up, which some binaries need)
 * except 5-level paging: with la57 the kernel walks one more page-table level on every TLB miss
 * in software, and a boot to SSH took 43 s instead of 29 s (same host, same hour).
 */
const TCG_CPU = "max,la57=off";
/** Unix socket paths longer than this (sun_path is 108 bytes with its NUL) are refused by the kernel. */
const MAX_SOCKET_PATH = 107;
/** How long QEMU gets from spawn to answering on its monitor, in ms. */
const MONITOR_READY_TIMEOUT_MS = 10_000;
/** Polling interval while waiting for the monitor or a process, in ms. */
const POLL_INTERVAL_MS = 100;
/** How often the serial log is read for the guest's ready line, in ms. */
const READY_POLL_MS = 200;
/** The serial log's newest bytes read for it (the console is quiet: kernel warnings, getty). */
const READY_READ_MAX_BYTES = 64 * 1024;
/** A guest that has not said it is ready after this long is probed anyway, in ms (a TCG boot takes 50-100 s). */
const READY_FALLBACK_MS = 150_000;
/** Pause between SSH readiness probes, in ms. */
const SSH_PROBE_INTERVAL_MS = 250;
/**
 * Banner probes kept open at once. While the guest boots, slirp accepts the TCP connection on the
 * host and holds it, so one probe cannot tell "not up yet" from "sshd is slow to answer". A probe
 * is therefore never abandoned early: a new one opens every interval while fewer than this many
 * wait. Abandoning them after 1 s (as before) left sshd's pre-auth children piling up past its
 * MaxStartups (10): sshd dropped connections for 26 s and a boot took 98 s instead of ~60 s.
 */
const SSH_BANNER_PROBES = 3;
/** A new banner probe opens this often while fewer than SSH_BANNER_PROBES wait, in ms. */
const SSH_BANNER_PROBE_EVERY_MS = 1_000;
/** Longest a single banner probe waits before it is closed and replaced, in ms. */
const SSH_BANNER_PROBE_MS = 30_000;
/** Handshake plus login once the banner came, in ms (a booting TCG guest's sshd can take seconds). */
const SSH_LOGIN_TIMEOUT_MS = 20_000;
/** How long QEMU gets to exit after SIGTERM (after a guest shutdown that timed out), in ms. */
const SIGTERM_GRACE_MS = 3_000;
/** Interval of the exit watch on a QEMU process this Node process did not spawn, in ms. */
const ADOPTED_EXIT_POLL_MS = 1_000;
/** How much of a log goes into an error message, in characters. */
const LOG_TAIL_CHARS = 2_000;

export interface VmPaths {
  dir: string;
  overlay: string;
  seed: string;
  qmp: string;
  serialLog: string;
  qemuLog: string;
  pidFile: string;
}

export function vmPaths(dir: string): VmPaths {
  const d = path.resolve(dir);
  return {
    dir: d,
    overlay: path.join(d, "overlay.qcow2"),
    seed: path.join(d, "seed"),
    qmp: path.join(d, "qmp.sock"),
    serialLog: path.join(d, "serial.log"),
    qemuLog: path.join(d, "qemu.log"),
    pidFile: path.join(d, "qemu.pid"),
  };
}

export interface VmConfig {
  /** Machine name, for messages and QEMU's process name. */
  name: string;
  dir: string;
  image: Pick<BuiltImage, "base" | "kernel" | "initrd">;
  memoryMiB: number;
  /** Virtual CPUs (default 1). */
  vcpus?: number;
  accel: Accel;
  /**
   * Start from this internal snapshot of the overlay (QEMU -loadvm) instead of booting: the
   * machine continues where the snapshot was taken (a suspended set's resume).
   */
  loadvm?: string;
  /**
   * Start from a machine state saved to this file (`saveVmToFile`, QEMU -incoming) instead of
   * booting: a prepared template's machine (templates.ts). The other settings must be the
   * template's own (memory, CPUs, devices), the disk an overlay on the template's.
   */
  incoming?: string;
  /** Port on `sshHost` forwarded to the guest's port 22. */
  sshPort: number;
  /** Address the SSH forward listens on: 127.0.0.1, or the set namespace's address (`netns`). */
  sshHost: string;
  /** The set's network namespace (internet labs, egress.ts); QEMU runs in it, eth0 unrestricted. */
  netns?: string;
  /** eth1's MAC, unique within the set. */
  eth1Mac: string;
  /** vde_switch control directory of the set. */
  switchSocket: string;
  /** 32 hex digits: systemd's machine-id (the base image's own would be shared by every VM). */
  machineId: string;
  /** SMBIOS product UUID (kubeadm checks it is unique per node). */
  uuid: string;
  /**
   * CPU niceness of every QEMU thread (default 0). Spare sets of the warm pool boot at 10 so
   * that learners' machines always come first on a busy host; `setVmNice` promotes them.
   */
  nice?: number;
}

export interface VmExit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

/** A running (or exited) QEMU process of one VM. */
export interface VmProcess {
  readonly name: string;
  readonly pid: number;
  readonly paths: VmPaths;
  /** Settles when the process has exited: crash, guest poweroff, stop or kill. */
  readonly exited: Promise<VmExit>;
  hasExited(): boolean;
}

/** Creates the VM's overlay on the base unless it exists (a restarted VM keeps its disk). */
export async function ensureOverlay(base: string, overlay: string): Promise<void> {
  if (await fs.stat(overlay).catch(() => null)) return;
  const tools = await requireTools(["qemu-img"]);
  const temp = `${overlay}.tmp`;
  await run(tools["qemu-img"], ["create", "-q", "-f", "qcow2", "-F", "qcow2", "-b", path.resolve(base), temp]);
  await fs.rename(temp, overlay);
}

/** Kernel command line of every lab VM. */
function kernelCommandLine(config: VmConfig): string {
  return [
    "root=/dev/vda",
    "rw",
    "console=ttyS0",
    // eth0/eth1 as the course names them, not ens3/ens4.
    "net.ifnames=0",
    "quiet",
    `systemd.machine_id=${config.machineId}`,
  ].join(" ");
}

/** QEMU's argv (without the binary). */
export function qemuArgs(config: VmConfig, paths: VmPaths): string[] {
  const accel = config.accel === "kvm" ? ["-accel", "kvm", "-cpu", "host"] : ["-accel", `tcg,tb-size=${TCG_TB_SIZE_MIB}`, "-cpu", TCG_CPU];
  return [
    "-name",
    `${config.name},process=labdeck-${config.name}`,
    "-no-user-config",
    "-nodefaults",
    "-display",
    "none",
    "-machine",
    "pc",
    ...accel,
    "-smp",
    String(config.vcpus ?? 1),
    "-m",
    String(config.memoryMiB),
    "-uuid",
    config.uuid,
    "-rtc",
    "base=utc",
    "-kernel",
    config.image.kernel,
    "-initrd",
    config.image.initrd,
    "-append",
    kernelCommandLine(config),
    "-drive",
    `file=${paths.overlay},if=none,id=disk0,format=qcow2,discard=unmap`,
    "-device",
    "virtio-blk-pci,drive=disk0",
    "-netdev",
    `${config.netns ? ETH0_NETDEV_INTERNET : ETH0_NETDEV},hostfwd=tcp:${config.sshHost}:${config.sshPort}-:22`,
    // romfile= : no iPXE option ROM; direct kernel boot never network-boots.
    "-device",
    `virtio-net-pci,netdev=n0,mac=${ETH0_MAC},romfile=`,
    "-netdev",
    `vde,id=n1,sock=${config.switchSocket}`,
    "-device",
    `virtio-net-pci,netdev=n1,mac=${config.eth1Mac},romfile=`,
    // Entropy from the host: sshd and the kernel do not wait for a TCG guest's slow jitter source.
    "-device",
    "virtio-rng-pci",
    // A VM generation id: each QEMU process has a new one, so a guest resumed from a saved state
    // (-loadvm) learns it was restored and its kernel reseeds its random generator (Linux vmgenid).
    "-device",
    "vmgenid,guid=auto",
    "-chardev",
    `file,id=console,path=${paths.serialLog}`,
    "-serial",
    "chardev:console",
    "-qmp",
    `unix:${paths.qmp},server=on,wait=off`,
    "-fw_cfg",
    `name=${SEED_FW_CFG_NAME},file=${paths.seed}`,
    "-pidfile",
    paths.pidFile,
    ...(config.loadvm ? ["-loadvm", checkTag(config.loadvm)] : []),
    ...(config.incoming ? ["-incoming", `exec:cat ${checkStatePath(config.incoming)}`] : []),
  ];
}

/** A saved-state path goes into a shell command line (QEMU's exec: migration): plain characters only. */
function checkStatePath(file: string): string {
  if (!/^\/[A-Za-z0-9/._-]+$/.test(file))
    throw new Error(`state file path ${JSON.stringify(file)} must be absolute, of A-Z a-z 0-9 / . _ - only`);
  return file;
}

/**
 * Starts QEMU for a prepared VM directory (overlay and seed written) and resolves once its
 * monitor answers. Rejects with QEMU's own error text when it exits first (a taken port, a
 * missing file). The process is detached: it keeps running if this Node process ends.
 */
export async function startVm(config: VmConfig): Promise<VmProcess> {
  const tools = await requireTools(["qemu-system-x86_64"]);
  const paths = vmPaths(config.dir);
  for (const socket of [paths.qmp, config.switchSocket]) {
    if (socket.length > MAX_SOCKET_PATH) {
      throw new Error(
        `${config.name}: socket path ${socket} is ${socket.length} characters; the limit is ${MAX_SOCKET_PATH} (use a shorter data directory)`,
      );
    }
  }
  await fs.rm(paths.qmp, { force: true });
  await fs.rm(paths.pidFile, { force: true });
  const logFd = openSync(paths.qemuLog, "w", 0o600);
  let child;
  try {
    // Through nice(1) and nsenter(1), which exec QEMU: every thread QEMU makes inherits the
    // niceness and the network namespace, and the pid stays QEMU's.
    const argv = [
      ...(config.nice ? ["nice", "-n", String(config.nice)] : []),
      ...(config.netns ? await inNamespace(config.netns) : []),
      tools["qemu-system-x86_64"],
      ...qemuArgs(config, paths),
    ];
    child = spawn(argv[0]!, argv.slice(1), { detached: true, stdio: ["ignore", logFd, logFd] });
  } finally {
    closeSync(logFd);
  }
  let exitInfo: VmExit | undefined;
  const exited = new Promise<VmExit>((resolve) => {
    child.once("error", () => resolve((exitInfo = { code: null, signal: null })));
    child.once("exit", (code, sig) => resolve((exitInfo = { code, signal: sig })));
  });
  child.unref();
  if (child.pid === undefined) {
    await exited;
    throw new Error(`${config.name}: could not start ${tools["qemu-system-x86_64"]}: ${await logTail(paths.qemuLog)}`);
  }
  const vm: VmProcess = { name: config.name, pid: child.pid, paths, exited, hasExited: () => exitInfo !== undefined };
  const deadline = Date.now() + MONITOR_READY_TIMEOUT_MS;
  for (;;) {
    if (vm.hasExited()) {
      throw new Error(`${config.name}: QEMU exited (${describeExit(exitInfo!)}) while starting: ${await logTail(paths.qemuLog)}`);
    }
    if (
      await qmpCommand(paths.qmp, "query-status").then(
        () => true,
        () => false,
      )
    )
      return vm;
    if (Date.now() > deadline) {
      await killVm(vm);
      throw new Error(`${config.name}: QEMU monitor did not answer within ${MONITOR_READY_TIMEOUT_MS} ms: ${await logTail(paths.qemuLog)}`);
    }
    await sleep(POLL_INTERVAL_MS);
  }
}

/**
 * A handle on a QEMU process started earlier (by this or an earlier platform process), or null
 * when `pid` is no longer that VM's QEMU.
 */
export async function adoptVm(name: string, dir: string, pid: number): Promise<VmProcess | null> {
  const paths = vmPaths(dir);
  if (!(await isOurProcess(pid, paths.pidFile))) return null;
  let gone = false;
  const exited = new Promise<VmExit>((resolve) => {
    // Unreferenced timers: watching an adopted VM never keeps this process alive by itself.
    const poll = async () => {
      if (await isAlive(pid)) return void setTimeout(poll, ADOPTED_EXIT_POLL_MS).unref();
      gone = true;
      // Not our child: its exit status went to whoever reaped it.
      resolve({ code: null, signal: null });
    };
    void poll();
  });
  return { name, pid, paths, exited, hasExited: () => gone };
}

/**
 * Waits until the guest's sshd answers on the forwarded port and a login with the pinned host key
 * and the set's key succeeds. Rejects at once on a host key mismatch or when QEMU exits, and
 * after `timeoutMs` otherwise (naming the last error and the end of the serial console).
 */
export async function waitForSsh(vm: VmProcess, endpoint: SshEndpoint, timeoutMs: number, since?: SerialMark | "up"): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  // By default the boot that is under way now: its ready line comes after the log's end (a boot
  // takes tens of seconds; the old boot's line after a reset is before it). "up": it runs already.
  since ??= await serialMark(vm);
  let lastError = "no attempt yet";
  // No connection before the guest says sshd is up (guest.ts READY_UNIT); a guest that never says
  // so (an image without the unit, a learner who masked it) is probed after READY_FALLBACK_MS.
  if (since !== "up") await waitForReadyLine(vm, since, Math.min(deadline, Date.now() + READY_FALLBACK_MS));
  while (Date.now() < deadline) {
    if (vm.hasExited()) {
      throw new Error(
        `${vm.name}: QEMU exited while waiting for SSH: ${await logTail(vm.paths.qemuLog)}\nconsole:\n${await logTail(vm.paths.serialLog)}`,
      );
    }
    try {
      await awaitBanner(endpoint.host, endpoint.port, Math.max(0, deadline - Date.now()), () => vm.hasExited());
      const client = await connectSsh(endpoint, SSH_LOGIN_TIMEOUT_MS);
      client.end();
      return;
    } catch (error) {
      if (error instanceof HostKeyMismatchError) throw error;
      lastError = (error as Error).message;
    }
    await sleep(SSH_PROBE_INTERVAL_MS);
  }
  throw new Error(
    `${vm.name}: SSH on ${endpoint.host}:${endpoint.port} not ready within ${Math.round(timeoutMs / 1000)} s (last error: ${lastError})\n` +
      `console:\n${await logTail(vm.paths.serialLog)}`,
  );
}

/** A place in a VM's serial log: ready lines after it belong to a boot that had not finished then. */
export interface SerialMark {
  offset: number;
}

/** Where the VM's serial log ends now (take it before asking for a reboot). */
export async function serialMark(vm: Pick<VmProcess, "paths">): Promise<SerialMark> {
  const stat = await fs.stat(vm.paths.serialLog).catch(() => null);
  return { offset: stat?.size ?? 0 };
}

/**
 * The guest's ready line (guest.ts). Not anchored at a line start: the console's getty prompt
 * ("controlplane login: ") usually comes first on the same line.
 */
const READY_LINE = new RegExp(`${READY_LINE_PREFIX}[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`);

/** Whether serial console output contains the guest's ready line. */
export function hasReadyLine(console: string): boolean {
  return READY_LINE.test(console);
}

/** Resolves when a ready line (guest.ts) appears in the serial log after `since`, the VM exits, or at `until` (epoch ms). */
async function waitForReadyLine(vm: VmProcess, since: SerialMark, until: number): Promise<void> {
  while (Date.now() < until && !vm.hasExited()) {
    const text = await readFrom(vm.paths.serialLog, since.offset);
    // A truncated log (QEMU restarted the file) is read from its start.
    if (text === null) since = { offset: 0 };
    else if (hasReadyLine(text)) return;
    await sleep(READY_POLL_MS);
  }
}

/** The file's bytes from `offset` as text; null when the file is shorter than that. */
async function readFrom(file: string, offset: number): Promise<string | null> {
  const handle = await fs.open(file, "r").catch(() => null);
  if (!handle) return "";
  try {
    const { size } = await handle.stat();
    if (size < offset) return null;
    const length = Math.min(size - offset, READY_READ_MAX_BYTES);
    const buffer = Buffer.alloc(length);
    await handle.read(buffer, 0, length, size - length);
    return buffer.toString("latin1");
  } finally {
    await handle.close();
  }
}

/**
 * Stops a VM: ACPI power button (the guest shuts down cleanly), then SIGTERM, then SIGKILL.
 * Resolves when the process is gone; harmless when it already is.
 */
export async function stopVm(vm: VmProcess, shutdownTimeoutMs: number): Promise<void> {
  if (vm.hasExited() || !(await isOurProcess(vm.pid, vm.paths.pidFile))) return;
  const asked = await qmpCommand(vm.paths.qmp, "system_powerdown").then(
    () => true,
    () => false,
  );
  if (asked && (await waitGone(vm.pid, shutdownTimeoutMs))) return;
  await terminate(vm.pid, vm.paths.pidFile, SIGTERM_GRACE_MS);
}

/** Sets the niceness of every thread of a running VM (niceness is per thread on Linux). */
export async function setVmNice(vm: VmProcess, nice: number): Promise<void> {
  const tasks = await fs.readdir(`/proc/${vm.pid}/task`).catch(() => [] as string[]);
  for (const tid of tasks) {
    try {
      os.setPriority(Number(tid), nice);
    } catch {
      // The thread ended meanwhile.
    }
  }
}

/** Ends QEMU at once (SIGKILL); the guest gets no shutdown. */
export async function killVm(vm: VmProcess): Promise<void> {
  if (!(await isOurProcess(vm.pid, vm.paths.pidFile))) return;
  signal(vm.pid, "SIGKILL");
  await waitGone(vm.pid, SIGTERM_GRACE_MS);
}

/** Hard reset, like the reset button: the guest reboots without shutting down; QEMU stays. */
export async function resetVm(vm: VmProcess): Promise<void> {
  await qmpCommand(vm.paths.qmp, "system_reset");
}

/** Longest a savevm/loadvm of one VM may take, in ms (RAM plus disk metadata; seconds under TCG). */
const VM_STATE_TIMEOUT_MS = 120_000;
/** Names of internal snapshots: they go into an HMP command line. */
const VM_STATE_TAG = /^[A-Za-z0-9_-]{1,40}$/;

/**
 * Saves the running VM's whole state (RAM, devices, disk) as an internal snapshot TAG of its
 * qcow2 overlay, replacing an earlier one of the name (HMP `savevm`; the guest pauses meanwhile).
 * For `labs test`'s reset between fixtures; open TCP connections into the guest do not survive a
 * later `loadVmState`, so callers close theirs first.
 */
export async function saveVmState(vm: Pick<VmProcess, "name" | "paths">, tag: string): Promise<void> {
  await hmp(vm, `savevm ${checkTag(tag)}`);
}

/** Puts the VM back to snapshot TAG (HMP `loadvm`): memory, disk and devices as they were saved. */
export async function loadVmState(vm: Pick<VmProcess, "name" | "paths">, tag: string): Promise<void> {
  await hmp(vm, `loadvm ${checkTag(tag)}`);
}

/** Deletes internal snapshot TAG of a running VM (HMP `delvm`); its disk space is reused. */
export async function deleteVmState(vm: Pick<VmProcess, "name" | "paths">, tag: string): Promise<void> {
  await hmp(vm, `delvm ${checkTag(tag)}`);
}

/**
 * Saves the VM's state as snapshot TAG and ends QEMU (the guest is paused first, so nothing runs
 * after the save): a later start with `loadvm: TAG` continues from there without a boot.
 */
export async function saveVmStateAndQuit(vm: VmProcess, tag: string): Promise<void> {
  await qmpCommand(vm.paths.qmp, "stop");
  await saveVmState(vm, tag);
  await qmpCommand(vm.paths.qmp, "quit").catch(() => undefined); // the monitor goes away with QEMU
  if (!(await waitGone(vm.pid, SIGTERM_GRACE_MS))) await terminate(vm.pid, vm.paths.pidFile, SIGTERM_GRACE_MS);
}

/** Longest a migration to or from a file may take, ms (RAM of one VM, mostly zero pages). */
const MIGRATION_TIMEOUT_MS = 180_000;
/** Migration bandwidth to a file, bytes/s: the disk's speed, not QEMU's default 128 MiB/s network pace. */
const MIGRATION_TO_FILE_BANDWIDTH = 8 * 1024 ** 3;

/**
 * Saves the VM's RAM and device state to `file` (QEMU migration into a file) with the guest
 * paused, and ends QEMU. The disk stays as it was at that moment: the overlay and the file
 * together are the machine, startable any number of times with `incoming: file` on a new overlay.
 */
export async function saveVmToFile(vm: VmProcess, file: string): Promise<void> {
  const qmp = vm.paths.qmp;
  await qmpCommand(qmp, "migrate-set-parameters", { "max-bandwidth": MIGRATION_TO_FILE_BANDWIDTH });
  await qmpCommand(qmp, "stop");
  await qmpCommand(qmp, "migrate", { uri: `exec:cat > ${checkStatePath(file)}` });
  const deadline = Date.now() + MIGRATION_TIMEOUT_MS;
  for (;;) {
    const info = (await qmpCommand(qmp, "query-migrate")) as { status?: string; "error-desc"?: string };
    if (info.status === "completed") break;
    if (info.status === "failed" || info.status === "cancelled")
      throw new Error(`${vm.name}: saving to ${file} failed: ${info["error-desc"] ?? info.status}`);
    if (Date.now() > deadline)
      throw new Error(`${vm.name}: saving to ${file} did not finish in ${MIGRATION_TIMEOUT_MS} ms (${info.status})`);
    await sleep(POLL_INTERVAL_MS);
  }
  await qmpCommand(qmp, "quit").catch(() => undefined); // the monitor goes away with QEMU
  if (!(await waitGone(vm.pid, SIGTERM_GRACE_MS))) await terminate(vm.pid, vm.paths.pidFile, SIGTERM_GRACE_MS);
}

/**
 * Waits until a VM started from a saved state (`incoming` or `loadvm`) has loaded it and runs. A
 * state saved with the guest paused (saveVmToFile, saveVmStateAndQuit pause it first) loads as
 * paused — QEMU carries the run state over (its global state section) whatever -S says — so a
 * loaded, paused VM is continued.
 */
export async function waitRunning(vm: VmProcess): Promise<void> {
  const deadline = Date.now() + MIGRATION_TIMEOUT_MS;
  for (;;) {
    if (vm.hasExited()) throw new Error(`${vm.name}: QEMU exited while loading its saved state: ${await logTail(vm.paths.qemuLog)}`);
    const status = (await qmpCommand(vm.paths.qmp, "query-status").catch(() => null)) as { status?: string } | null;
    if (status?.status === "running") return;
    if (status?.status === "paused" || status?.status === "restore-vm") await qmpCommand(vm.paths.qmp, "cont").catch(() => undefined);
    if (Date.now() > deadline)
      throw new Error(`${vm.name}: not running ${MIGRATION_TIMEOUT_MS} ms after its start from a saved state (${status?.status})`);
    await sleep(POLL_INTERVAL_MS);
  }
}

function checkTag(tag: string): string {
  if (!VM_STATE_TAG.test(tag)) throw new Error(`snapshot name ${JSON.stringify(tag)} must match ${VM_STATE_TAG}`);
  return tag;
}

/** An HMP command through QMP: HMP reports its errors as text in the answer, not as a QMP error. */
async function hmp(vm: Pick<VmProcess, "name" | "paths">, commandLine: string): Promise<void> {
  const answer = await qmpCommand(vm.paths.qmp, "human-monitor-command", { "command-line": commandLine }, VM_STATE_TIMEOUT_MS);
  if (typeof answer === "string" && answer.trim() !== "") throw new Error(`${vm.name}: ${commandLine}: ${answer.trim()}`);
}

/**
 * Resolves once something at host:port sends an SSH banner line, rejects at the timeout or when
 * `gone()` says the VM exited. Keeps up to SSH_BANNER_PROBES connections waiting at once (see there).
 */
export function awaitBanner(host: string, port: number, timeoutMs: number, gone: () => boolean = () => false): Promise<void> {
  return new Promise((resolve, reject) => {
    const open = new Set<net.Socket>();
    let lastError = "no probe yet";
    let settled = false;
    const settle = (error?: Error) => {
      if (settled) return;
      settled = true;
      clearInterval(opener);
      clearTimeout(overall);
      for (const socket of open) socket.destroy();
      if (error) reject(error);
      else resolve();
    };
    const probe = () => {
      if (gone()) return settle(new Error("the machine exited"));
      if (open.size >= SSH_BANNER_PROBES) return;
      const socket = net.connect({ host, port });
      open.add(socket);
      let received = "";
      const drop = (why: string) => {
        lastError = why;
        open.delete(socket);
        socket.destroy();
      };
      socket.setTimeout(SSH_BANNER_PROBE_MS, () => drop(`no SSH banner within ${SSH_BANNER_PROBE_MS} ms`));
      socket.on("error", (error) => drop(error.message));
      socket.on("end", () => drop("connection closed before the SSH banner"));
      socket.on("data", (chunk) => {
        received += chunk.toString("latin1");
        const newline = received.indexOf("\n");
        if (newline < 0) return;
        const line = received.slice(0, newline);
        if (line.startsWith("SSH-")) settle();
        else drop(`unexpected banner ${JSON.stringify(line.slice(0, 80))}`);
      });
    };
    const opener = setInterval(probe, SSH_BANNER_PROBE_EVERY_MS);
    const overall = setTimeout(
      () => settle(new Error(`no SSH banner within ${Math.round(timeoutMs / 1000)} s (last: ${lastError})`)),
      timeoutMs,
    );
    probe();
  });
}

function describeExit(exit: VmExit): string {
  return exit.signal ? `signal ${exit.signal}` : `code ${exit.code}`;
}

/** The end of a log file, for error messages. */
export async function logTail(file: string): Promise<string> {
  const text = await fs.readFile(file, "utf8").catch((error: Error) => `(cannot read ${file}: ${error.message})`);
  const trimmed = text.trim();
  if (!trimmed) return "(empty)";
  return trimmed.length > LOG_TAIL_CHARS ? "…" + trimmed.slice(-LOG_TAIL_CHARS) : trimmed;
}
