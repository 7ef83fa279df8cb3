/**
 * The local QEMU machine provider: each lab session gets its own VMs (one per machine name) on
 * this host, booted from a built image (image.ts), wired to a private vde_switch, reachable by
 * SSH on loopback ports with keys made for the session. Everything a later platform process needs
 * to adopt or remove them is in `<dataDir>/sessions/<sessionId>/state.json` (state.ts).
 *
 *   <dataDir>/sessions/<sessionId>/state.json
 *                                  switch/, switch.pid      vde_switch (switch.ts)
 *                                  vm-<name>/               one VM (vm.ts)
 *
 * A session whose lab asks for the internet also gets a network namespace and veth (egress.ts),
 * named after the session; its VMs run in it and answer SSH on the namespace's address.
 */
import { randomBytes, randomUUID } from "node:crypto";
import fs from "node:fs/promises";
import path from "node:path";
import type { Logger } from "pino";
import {
  NoCapacityError,
  type MachineHealth,
  type MachineProvider,
  type MachineRequest,
  type ProvisionedMachine,
  type RecoveryReport,
} from "../provider";
import type { SshEndpoint } from "../../terminal/ssh";
import { checkCapacity, vmFootprintMiB } from "./capacity";
import type { BuiltImage } from "./image";
import { generateEd25519 } from "./keys";
import { freeLoopbackPort } from "./ports";
import { isAlive, isOurProcess, processArgv, residentKiB, terminate } from "./processes";
import { egressIntact, egressNamespace, egressNamespaceSessions, ensureEgressTable, namespacePids, setUpEgress, tearDownEgress, egressUnavailable } from "./egress";
import { InternetNotOfferedError } from "./network";
import { hostsFile, seedFile } from "./seed";
import { SessionId, listSessionDirs, readState, sessionDir, sessionsDir, writeState, type SessionState, type VmRecord } from "./state";
import { isSwitchAlive, startSwitch, stopSwitch } from "./switch";
import { adoptVm, ensureOverlay, loadVmState, resetVm, saveVmState, setVmNice, startVm, stopVm, vmPaths, waitForSsh, type Accel, type VmConfig, type VmProcess } from "./vm";

/** Guest RAM per VM when not configured, MiB: what the course's machines need without Kubernetes images running. */
export const DEFAULT_MEMORY_MIB = 512;
/**
 * How long a VM may take from start to answering SSH, in ms. Measured under TCG on 2 cores:
 * one VM 25-35 s, three at once 45-60 s; generous for a loaded host.
 */
export const BOOT_TIMEOUT_MS = 240_000;
/**
 * How long an adopted VM gets to answer SSH after a platform restart, in ms. Only logged: a VM
 * that is mid-reboot or whose sshd a learner broke is still the learner's and stays adopted.
 */
const ADOPT_SSH_TIMEOUT_MS = 30_000;
/** How long a suspended VM's guest gets to shut down cleanly (ACPI) before QEMU is ended, in ms. */
const SUSPEND_SHUTDOWN_MS = 60_000;
/** How long a killed VM or switch gets between SIGTERM and SIGKILL, in ms (QEMU exits at once on SIGTERM). */
const KILL_GRACE_MS = 3_000;
/** Niceness of machines made in the background (warm-pool spares) until they are handed out. */
const BACKGROUND_NICE = 10;
/** Most machines one session may ask for. */
const MAX_MACHINES = 8;
/** Attempts to start a VM when its SSH forward port was taken by someone else meanwhile. */
const PORT_ATTEMPTS = 3;
/** The session network: every session uses the same addresses (isolated by its own switch). */
const ETH1_NETWORK = "192.168.56";
/** Host part of the first machine's eth1 address: controlplane .10, node01 .11, node02 .12. */
const ETH1_FIRST_HOST = 10;
const ETH1_PREFIX = 24;
/** QEMU's error when a hostfwd port is taken. */
const HOSTFWD_TAKEN = /Could not set up host forwarding rule/;
/** Machine names: lowercase hostnames, as static-hosts.ts accepts. */
const MACHINE_NAME = /^[a-z][a-z0-9-]{0,30}$/;

export interface QemuProviderOptions {
  dataDir: string;
  /** The built image new VMs boot (image.ts); without one the provider can only list, adopt and destroy. */
  image?: Pick<BuiltImage, "base" | "kernel" | "initrd">;
  /** Finds the built image of a variant a request names (lab.yaml `image`); else `image` is booted. */
  imageFor?: (variant: string) => Promise<Pick<BuiltImage, "base" | "kernel" | "initrd"> | null>;
  /** Guest RAM per VM, MiB. */
  memoryMiB?: number;
  /** tcg (software, works everywhere) or kvm (only where a real timed boot showed it works). */
  accel?: Accel;
  log: Logger;
  /** Start-to-SSH limit per VM, ms. */
  bootTimeoutMs?: number;
}

export interface QemuSessionSummary {
  sessionId: string;
  labSlug: string;
  phase: SessionState["phase"];
  createdAt: string;
  switchAlive: boolean;
  machines: { name: string; pid: number; running: boolean; sshPort: number; eth1Address: string; rssKiB?: number }[];
}

export interface QemuProvider extends MachineProvider {
  health(sessionId: string, machines: readonly ProvisionedMachine[]): Promise<MachineHealth[]>;
  reboot(sessionId: string, machine: ProvisionedMachine): Promise<void>;
  reset(sessionId: string, machine: ProvisionedMachine): Promise<void>;
  /** Saves a running machine's whole state (memory and disk) as snapshot TAG; for `labs test`. */
  saveState(sessionId: string, machine: ProvisionedMachine, tag: string): Promise<void>;
  /** Puts a running machine back to snapshot TAG; its SSH connections from before are dead. */
  loadState(sessionId: string, machine: ProvisionedMachine, tag: string): Promise<void>;
  promote(sessionId: string, machines: readonly ProvisionedMachine[]): Promise<void>;
  suspend(sessionId: string, machines: readonly ProvisionedMachine[]): Promise<void>;
  resume(sessionId: string, machines: readonly ProvisionedMachine[]): Promise<ProvisionedMachine[]>;
  adoptOrCleanup(options?: { keep?: (sessionId: string) => boolean }): Promise<RecoveryReport>;
  /** Every session on disk under this data directory, with its processes' liveness. */
  list(): Promise<QemuSessionSummary[]>;
  /** The session's machines as create returned them, from its state (for a CLI that did not create it). */
  machinesOf(sessionId: string): Promise<ProvisionedMachine[]>;
}

/** A session this process serves: its state and handles on its live QEMU processes. */
interface Runtime {
  dir: string;
  state: SessionState;
  vms: Map<string, VmProcess>;
  destroying: boolean;
}

export function qemuProvider(options: QemuProviderOptions): QemuProvider {
  const memoryMiB = options.memoryMiB ?? DEFAULT_MEMORY_MIB;
  const accel = options.accel ?? "tcg";
  const bootTimeoutMs = options.bootTimeoutMs ?? BOOT_TIMEOUT_MS;
  const log = options.log.child({ provider: "qemu" });
  const runtimes = new Map<string, Runtime>();
  /** One operation at a time per session (create, destroy, reboot), in call order. */
  const sessionLocks = new Map<string, Promise<unknown>>();
  /** Capacity check plus registration of the new session, one at a time. */
  let capacityLock: Promise<unknown> = Promise.resolve();

  log.info({ accel, memoryMiB, dataDir: path.resolve(options.dataDir) }, `qemu provider: VMs use ${accel}`);

  function serialised<T>(sessionId: string, fn: () => Promise<T>): Promise<T> {
    const previous = sessionLocks.get(sessionId) ?? Promise.resolve();
    const next = previous.catch(() => undefined).then(fn);
    sessionLocks.set(sessionId, next);
    void next.finally(() => {
      if (sessionLocks.get(sessionId) === next) sessionLocks.delete(sessionId);
    }).catch(() => undefined);
    return next;
  }

  /** Memory the tracked VMs will still grow into, MiB. */
  async function committedMiB(): Promise<number> {
    let total = 0;
    for (const runtime of runtimes.values()) {
      for (const record of runtime.state.vms) {
        const footprint = vmFootprintMiB(runtime.state.memoryMiB);
        const rss = record.pid > 0 ? ((await residentKiB(record.pid)) ?? 0) / 1024 : 0;
        const alive = record.pid === 0 || runtime.vms.get(record.name)?.hasExited() === false;
        if (alive) total += Math.max(0, footprint - rss);
      }
    }
    return Math.ceil(total);
  }

  function save(runtime: Runtime): Promise<void> {
    return writeState(runtime.dir, runtime.state);
  }

  function endpointOf(state: SessionState, record: VmRecord): SshEndpoint {
    return {
      name: record.name,
      host: state.egress?.nsAddress ?? "127.0.0.1",
      port: record.sshPort,
      user: "root",
      privateKey: state.clientKey.privateKey,
      hostKey: record.hostPublicKey,
    };
  }

  function provisioned(state: SessionState): ProvisionedMachine[] {
    return state.vms.map((record) => ({ ...endpointOf(state, record), providerRef: `${state.sessionId}/${record.name}` }));
  }

  function vmConfig(state: SessionState, record: VmRecord): VmConfig {
    return {
      name: record.name,
      dir: record.dir,
      image: state.image,
      memoryMiB: state.memoryMiB,
      accel: state.accel,
      sshPort: record.sshPort,
      sshHost: state.egress?.nsAddress ?? "127.0.0.1",
      netns: state.egress?.netns,
      eth1Mac: record.eth1Mac,
      switchSocket: state.switch.socket,
      machineId: record.machineId,
      uuid: record.uuid,
    };
  }

  /** Notes a VM's exit in the log (a learner's poweroff, a crash) unless the session is going away. */
  function watch(runtime: Runtime, vm: VmProcess): void {
    runtime.vms.set(vm.name, vm);
    void vm.exited.then((exit) => {
      if (runtime.destroying || runtime.state.phase === "suspended" || runtime.vms.get(vm.name) !== vm) return;
      log.warn({ sessionId: runtime.state.sessionId, machine: vm.name, qemuPid: vm.pid, exit }, "qemu provider: VM stopped (guest poweroff or crash)");
    });
  }

  /**
   * An internet session's namespace, veth and nftables table are in place: made when missing
   * (first start, or after a host reboot removed them), else the table is refreshed (idempotent).
   * Call before starting the session's VMs, once per batch (never concurrently for one session).
   */
  async function ensureEgress(runtime: Runtime): Promise<void> {
    const state = runtime.state;
    if (state.egress && (await egressIntact(state.egress))) return ensureEgressTable(log);
    const started = Date.now();
    state.egress = undefined;
    state.egress = await setUpEgress(options.dataDir, state.sessionId, log);
    await save(runtime);
    log.info({ sessionId: state.sessionId, ...state.egress, ms: Date.now() - started }, "qemu provider: internet session namespace ready");
  }

  /** Starts one VM of the session, choosing a new SSH port when its port turns out to be taken. */
  async function startRecord(runtime: Runtime, record: VmRecord, reusePort: boolean, nice = 0): Promise<VmProcess> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await startVm({ ...vmConfig(runtime.state, record), nice });
      } catch (error) {
        if (reusePort || attempt >= PORT_ATTEMPTS || !HOSTFWD_TAKEN.test((error as Error).message)) throw error;
        record.sshPort = await freeLoopbackPort();
        log.info({ machine: record.name, port: record.sshPort }, "qemu provider: SSH port was taken; retrying with another");
      }
    }
  }

  async function create(request: MachineRequest): Promise<ProvisionedMachine[]> {
    const sessionId = SessionId.parse(request.sessionId);
    const names = [...request.machines];
    if (names.length === 0 || names.length > MAX_MACHINES) throw new Error(`a session needs 1..${MAX_MACHINES} machines (got ${names.length})`);
    for (const name of names) {
      if (!MACHINE_NAME.test(name)) throw new Error(`machine name ${JSON.stringify(name)} must be a lowercase hostname (≤31 characters)`);
    }
    if (new Set(names).size !== names.length) throw new Error(`machine names repeat: ${names.join(", ")}`);
    if (request.internet) {
      const unavailable = await egressUnavailable();
      if (unavailable) throw new InternetNotOfferedError(request.labSlug, unavailable);
    }
    const dir = sessionDir(options.dataDir, sessionId);
    const image = request.image && options.imageFor ? await options.imageFor(request.image) : options.image;
    if (!image) {
      throw new Error(
        `the qemu provider has no image ${request.image ?? ""} to boot: build it (npm run labdeck -- image build${request.image ? ` --variant ${request.image}` : ""})`,
      );
    }

    return serialised(sessionId, async () => {
      if (runtimes.has(sessionId) || (await fs.stat(dir).catch(() => null))) {
        throw new Error(`session ${sessionId} already has machines (${dir}); destroy it first`);
      }
      const started = Date.now();
      const runtime = await reserve(sessionId, request.labSlug, names, dir, image, request.internet === true);
      try {
        await fs.mkdir(dir, { recursive: true, mode: 0o700 });
        await save(runtime);
        const sw = await startSwitch(dir);
        runtime.state.switch = { socket: sw.socket, pidFile: sw.pidFile, pid: sw.pid };
        await save(runtime);
        if (runtime.state.internet) await ensureEgress(runtime);

        const hosts = hostsFile(runtime.state.vms.map((r) => ({ name: r.name, eth1Address: r.eth1Address })));
        const hostKeys = new Map(runtime.state.vms.map((r) => [r.name, generateEd25519(`${r.name}@labdeck`)]));
        for (const record of runtime.state.vms) record.hostPublicKey = hostKeys.get(record.name)!.publicKey;

        // allSettled: a failed start must not leave a sibling's start running into the teardown.
        const starts = await Promise.allSettled(
          runtime.state.vms.map(async (record) => {
            const paths = vmPaths(record.dir);
            await fs.mkdir(paths.dir, { recursive: true, mode: 0o700 });
            await ensureOverlay(runtime.state.image.base, paths.overlay);
            const hostKey = hostKeys.get(record.name)!;
            const seed = seedFile({
              hostname: record.name,
              eth1Address: record.eth1Address,
              hosts,
              hostPrivateKey: hostKey.privateKey,
              hostPublicKey: hostKey.publicKey,
              authorizedKeys: `${runtime.state.clientKey.publicKey} labdeck-${sessionId}\n`,
            });
            await fs.writeFile(paths.seed, seed, { mode: 0o600 });
            const vm = await startRecord(runtime, record, false, request.background ? BACKGROUND_NICE : 0);
            record.pid = vm.pid;
            watch(runtime, vm);
          }),
        );
        await save(runtime);
        const failed = starts.find((r): r is PromiseRejectedResult => r.status === "rejected");
        if (failed) throw failed.reason;

        await Promise.all(
          runtime.state.vms.map(async (record) => {
            const t = Date.now();
            await waitForSsh(runtime.vms.get(record.name)!, endpointOf(runtime.state, record), bootTimeoutMs);
            log.debug({ sessionId, machine: record.name, ms: Date.now() - t }, "qemu provider: SSH ready");
          }),
        );
        runtime.state.phase = "ready";
        await save(runtime);
        log.info({ sessionId, lab: request.labSlug, machines: names, ms: Date.now() - started }, "qemu provider: session ready");
        return provisioned(runtime.state);
      } catch (error) {
        log.warn({ sessionId, err: error }, "qemu provider: create failed; removing what was started");
        await teardown(sessionId).catch((cleanupError: unknown) =>
          log.error({ sessionId, err: cleanupError }, "qemu provider: cleanup after failed create failed"),
        );
        throw error;
      }
    });
  }

  function noCapacity(sessionId: string, check: Awaited<ReturnType<typeof checkCapacity>>): NoCapacityError {
    log.warn({ sessionId, ...check }, "qemu provider: no capacity");
    return new NoCapacityError(
      `マシンを起動するメモリが足りません（必要 ${check.needed} MiB、空き ${Math.max(0, check.available - check.reserve - check.committed)} MiB）。しばらくしてからもう一度お試しください`,
    );
  }

  /** Checks capacity and registers the new session's runtime in one step (no two creates race past the check). */
  function reserve(
    sessionId: string,
    labSlug: string,
    names: string[],
    dir: string,
    image: Pick<BuiltImage, "base" | "kernel" | "initrd">,
    internet: boolean,
  ): Promise<Runtime> {
    const step = capacityLock.catch(() => undefined).then(async () => {
      const check = await checkCapacity(names.length, memoryMiB, await committedMiB());
      if (!check.fits) throw noCapacity(sessionId, check);
      const clientKey = generateEd25519(`labdeck-${sessionId}`);
      const vms: VmRecord[] = [];
      for (const [index, name] of names.entries()) {
        vms.push({
          name,
          dir: path.join(dir, `vm-${name}`),
          pid: 0,
          sshPort: await freeLoopbackPort(),
          eth1Address: `${ETH1_NETWORK}.${ETH1_FIRST_HOST + index}/${ETH1_PREFIX}`,
          // In QEMU's 52:54:00 range; unique within the session (sessions are separate L2 networks).
          eth1Mac: `52:54:00:56:00:${(ETH1_FIRST_HOST + index).toString(16).padStart(2, "0")}`,
          hostPublicKey: "",
          machineId: randomBytes(16).toString("hex"),
          uuid: randomUUID(),
        });
      }
      const runtime: Runtime = {
        dir,
        destroying: false,
        vms: new Map(),
        state: {
          version: 1,
          sessionId,
          labSlug,
          phase: "starting",
          creatorPid: process.pid,
          createdAt: new Date().toISOString(),
          image: { base: path.resolve(image.base), kernel: path.resolve(image.kernel), initrd: path.resolve(image.initrd) },
          memoryMiB,
          accel,
          clientKey,
          switch: { socket: path.join(dir, "switch"), pidFile: path.join(dir, "switch.pid"), pid: 0 },
          internet,
          vms,
        },
      };
      runtimes.set(sessionId, runtime);
      return runtime;
    });
    capacityLock = step;
    return step;
  }

  /**
   * Removes a session completely: its VMs (killed: the disks are deleted anyway), its switch,
   * any process still naming its directory, the directory. Works from memory or from disk.
   */
  async function teardown(sessionId: string): Promise<void> {
    const dir = sessionDir(options.dataDir, sessionId);
    const runtime = runtimes.get(sessionId);
    if (runtime) runtime.destroying = true;
    const exists = await fs.stat(dir).catch(() => null);
    if (exists) {
      const found = runtime ? { state: runtime.state } : await readState(dir);
      if ("state" in found) {
        const state = found.state;
        if (state.phase !== "destroying") {
          state.phase = "destroying";
          await writeState(dir, state).catch(() => undefined);
        }
        await Promise.all(state.vms.filter((r) => r.pid > 0).map((r) => terminate(r.pid, vmPaths(r.dir).pidFile, KILL_GRACE_MS)));
        if (state.switch.pid > 0) await stopSwitch(state.switch);
      }
      // Whatever the state file missed (a crash between spawn and write): every process naming the directory.
      await killProcessesUnder(dir);
      // The namespace is named after the session: found even when the state file is not usable.
      await tearDownEgress(egressNamespace(options.dataDir, sessionId), "state" in found ? found.state.egress : undefined);
      await fs.rm(dir, { recursive: true, force: true });
    }
    runtimes.delete(sessionId);
  }

  async function destroy(sessionId: string): Promise<void> {
    const id = SessionId.parse(sessionId);
    await serialised(id, () => teardown(id));
    log.info({ sessionId: id }, "qemu provider: session destroyed");
  }

  /**
   * The provider session and machine name a machine belongs to: from its providerRef
   * ("<provider session>/<name>"), which stays right when a warm pool handed the set to a learner
   * session with another id; else the session id given.
   */
  function locate(sessionId: string, machine: Pick<ProvisionedMachine, "name" | "providerRef">): { id: string; name: string } {
    const [ref, name] = machine.providerRef.split("/");
    if (ref && name && SessionId.safeParse(ref).success) return { id: ref, name };
    return { id: SessionId.parse(sessionId), name: machine.name };
  }

  async function runtimeOrThrow(sessionId: string): Promise<Runtime> {
    const runtime = runtimes.get(sessionId);
    if (!runtime) throw new Error(`session ${sessionId} is not served by this qemu provider (unknown or not adopted)`);
    return runtime;
  }

  async function health(sessionId: string, machines: readonly ProvisionedMachine[]): Promise<MachineHealth[]> {
    return Promise.all(
      machines.map(async (m): Promise<MachineHealth> => {
        const { id, name } = locate(sessionId, m);
        const runtime = runtimes.get(id);
        const record = runtime?.state.vms.find((r) => r.name === name);
        if (!runtime || !record) return { name: m.name, state: "unknown", detail: "no such VM in this provider" };
        const vm = runtime.vms.get(name);
        if (vm && !vm.hasExited() && (await isAlive(vm.pid))) return { name: m.name, state: "running" };
        return { name: m.name, state: "stopped", detail: "QEMU process has exited (guest poweroff or crash)" };
      }),
    );
  }

  async function reboot(sessionId: string, machine: ProvisionedMachine): Promise<void> {
    const { id, name } = locate(sessionId, machine);
    await serialised(id, async () => {
      const runtime = await runtimeOrThrow(id);
      const record = runtime.state.vms.find((r) => r.name === name);
      if (!record) throw new Error(`session ${id} has no machine ${name}`);
      const current = runtime.vms.get(record.name);
      let vm: VmProcess;
      if (current && !current.hasExited() && (await isAlive(current.pid))) {
        await resetVm(current);
        vm = current;
        log.info({ sessionId: id, machine: record.name }, "qemu provider: hard reset");
      } else {
        // Same port as before: the platform has it stored with the machine.
        if (runtime.state.internet) await ensureEgress(runtime);
        vm = await startRecord(runtime, record, true);
        record.pid = vm.pid;
        watch(runtime, vm);
        await save(runtime);
        log.info({ sessionId: id, machine: record.name, qemuPid: vm.pid }, "qemu provider: powered on again");
      }
      await waitForSsh(vm, endpointOf(runtime.state, record), bootTimeoutMs);
    });
  }

  /**
   * Puts one machine back to the image's first boot: QEMU is ended, its overlay replaced by a
   * fresh one on the base, and it boots with the same seed (hostname, eth1, host key, login key),
   * so pinned keys and the session's endpoints stay valid. The lab's setup is the caller's.
   */
  async function reset(sessionId: string, machine: ProvisionedMachine): Promise<void> {
    const { id, name } = locate(sessionId, machine);
    await serialised(id, async () => {
      const runtime = await runtimeOrThrow(id);
      const record = runtime.state.vms.find((r) => r.name === name);
      if (!record) throw new Error(`session ${id} has no machine ${name}`);
      const started = Date.now();
      runtime.vms.delete(record.name); // its exit is expected, not a crash
      if (record.pid > 0) await terminate(record.pid, vmPaths(record.dir).pidFile, KILL_GRACE_MS);
      const paths = vmPaths(record.dir);
      await fs.rm(paths.overlay, { force: true });
      await ensureOverlay(runtime.state.image.base, paths.overlay);
      if (runtime.state.internet) await ensureEgress(runtime);
      const vm = await startRecord(runtime, record, true);
      record.pid = vm.pid;
      watch(runtime, vm);
      await save(runtime);
      await waitForSsh(vm, endpointOf(runtime.state, record), bootTimeoutMs);
      log.info({ sessionId: id, machine: name, ms: Date.now() - started }, "qemu provider: machine reset to a fresh disk");
    });
  }

  async function vmState(sessionId: string, machine: ProvisionedMachine, act: (vm: VmProcess) => Promise<void>): Promise<void> {
    const { id, name } = locate(sessionId, machine);
    await serialised(id, async () => {
      const runtime = await runtimeOrThrow(id);
      const vm = runtime.vms.get(name);
      if (!vm || vm.hasExited()) throw new Error(`session ${id}: machine ${name} is not running`);
      await act(vm);
    });
  }

  /** Gives a session's VMs normal CPU priority (a spare set handed to a learner). */
  async function promote(sessionId: string, machines: readonly ProvisionedMachine[]): Promise<void> {
    const runtime = runtimes.get(sessionOf(sessionId, machines));
    if (!runtime) return;
    await Promise.all([...runtime.vms.values()].map((vm) => setVmNice(vm, 0)));
  }

  /** Session id behind a set of machines (a pooled set keeps the pool's id in its providerRef). */
  function sessionOf(sessionId: string, machines: readonly ProvisionedMachine[]): string {
    return machines[0] ? locate(sessionId, machines[0]).id : SessionId.parse(sessionId);
  }

  async function suspend(sessionId: string, machines: readonly ProvisionedMachine[]): Promise<void> {
    const id = sessionOf(sessionId, machines);
    await serialised(id, async () => {
      const runtime = await runtimeOrThrow(id);
      if (runtime.state.phase === "suspended") return;
      runtime.state.phase = "suspended";
      await save(runtime);
      const started = Date.now();
      // The guests shut down cleanly (ACPI), so what the learner wrote is on disk.
      await Promise.all([...runtime.vms.values()].map((vm) => stopVm(vm, SUSPEND_SHUTDOWN_MS)));
      runtime.vms.clear();
      if (await isSwitchAlive(runtime.state.switch)) await stopSwitch(runtime.state.switch);
      log.info({ sessionId: id, ms: Date.now() - started }, "qemu provider: session suspended (VMs off, disks kept)");
    });
  }

  async function resume(sessionId: string, machines: readonly ProvisionedMachine[]): Promise<ProvisionedMachine[]> {
    const id = sessionOf(sessionId, machines);
    return serialised(id, async () => {
      const runtime = await runtimeOrThrow(id);
      if (runtime.state.phase === "ready" && runtime.state.vms.every((r) => runtime.vms.get(r.name)?.hasExited() === false)) {
        return provisioned(runtime.state);
      }
      const started = Date.now();
      // Capacity check and spawn in one step, as in create: no two starts race past the check.
      const spawn = capacityLock.catch(() => undefined).then(async () => {
        const down = runtime.state.vms.filter((r) => runtime.vms.get(r.name)?.hasExited() !== false);
        const check = await checkCapacity(down.length, memoryMiB, await committedMiB());
        if (!check.fits) throw noCapacity(id, check);
        if (!(await isSwitchAlive(runtime.state.switch))) {
          const sw = await startSwitch(runtime.dir);
          runtime.state.switch = { socket: sw.socket, pidFile: sw.pidFile, pid: sw.pid };
          await save(runtime);
        }
        if (runtime.state.internet) await ensureEgress(runtime);
        await Promise.all(
          down.map(async (record) => {
            // Its old port when free (the platform has it stored), else a new one.
            const vm = await startRecord(runtime, record, false);
            record.pid = vm.pid;
            watch(runtime, vm);
          }),
        );
      });
      capacityLock = spawn;
      await spawn;
      runtime.state.phase = "ready";
      await save(runtime);
      await Promise.all(runtime.state.vms.map((record) => waitForSsh(runtime.vms.get(record.name)!, endpointOf(runtime.state, record), bootTimeoutMs)));
      log.info({ sessionId: id, ms: Date.now() - started }, "qemu provider: session resumed");
      return provisioned(runtime.state);
    });
  }

  async function adoptOrCleanup(opts: { keep?: (sessionId: string) => boolean } = {}): Promise<RecoveryReport> {
    const report: RecoveryReport = { adopted: [], cleaned: [] };
    const ids = (await listSessionDirs(options.dataDir)).filter((id) => !runtimes.has(id));
    // All sessions at once: each may wait for its VMs' SSH, and a restart should not take minutes.
    await Promise.all(
      ids.map((sessionId) =>
        serialised(sessionId, async () => {
          const dir = sessionDir(options.dataDir, sessionId);
          const found = await readState(dir);
          if ("state" in found && found.state.phase === "starting" && found.state.creatorPid !== process.pid && (await isAlive(found.state.creatorPid))) {
            // Another process (the CLI, a second platform) is creating this session right now.
            log.info({ sessionId, creatorPid: found.state.creatorPid }, "qemu provider: session is being created by another process; left alone");
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
      for (const pid of await namespacePids(netns)) await terminate(pid, sessionsDir(options.dataDir) + "/", KILL_GRACE_MS).catch(() => undefined);
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
        waitForSsh(vm, endpointOf(state, state.vms.find((r) => r.name === vm.name)!), ADOPT_SSH_TIMEOUT_MS).then(
          () => `${vm.name}: ssh ok`,
          (error: Error) => `${vm.name}: ${error.message.split("\n")[0]}`,
        ),
      ),
    );
    log.info({ sessionId: state.sessionId, machines: answers, stopped: state.vms.length - runtime.vms.size }, "qemu provider: adopted session");
    return true;
  }

  async function list(): Promise<QemuSessionSummary[]> {
    const result: QemuSessionSummary[] = [];
    for (const sessionId of await listSessionDirs(options.dataDir)) {
      const found = runtimes.get(sessionId) ?? (await readState(sessionDir(options.dataDir, sessionId)));
      if (!("state" in found)) continue;
      const state = found.state;
      result.push({
        sessionId,
        labSlug: state.labSlug,
        phase: state.phase,
        createdAt: state.createdAt,
        switchAlive: state.switch.pid > 0 && (await isSwitchAlive(state.switch)),
        machines: await Promise.all(
          state.vms.map(async (r) => {
            const running = r.pid > 0 && (await isOurProcess(r.pid, vmPaths(r.dir).pidFile));
            return {
              name: r.name,
              pid: r.pid,
              running,
              sshPort: r.sshPort,
              eth1Address: r.eth1Address,
              rssKiB: running ? await residentKiB(r.pid) : undefined,
            };
          }),
        ),
      });
    }
    return result;
  }

  async function machinesOf(sessionId: string): Promise<ProvisionedMachine[]> {
    const runtime = runtimes.get(sessionId);
    if (runtime) return provisioned(runtime.state);
    const found = await readState(sessionDir(options.dataDir, sessionId));
    if ("error" in found) throw new Error(`session ${sessionId}: ${found.error}`);
    return provisioned(found.state);
  }

  return {
    name: "qemu",
    create,
    destroy,
    health,
    reboot,
    reset,
    saveState: (sessionId, machine, tag) => vmState(sessionId, machine, (vm) => saveVmState(vm, tag)),
    loadState: (sessionId, machine, tag) => vmState(sessionId, machine, (vm) => loadVmState(vm, tag)),
    suspend,
    resume,
    promote,
    adoptOrCleanup,
    list,
    machinesOf,
  };
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
async function killProcessesUnder(dir: string, filter: (argv: string[]) => boolean = () => true): Promise<number> {
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
