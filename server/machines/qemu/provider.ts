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
import os from "node:os";
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
import type { SshEndpoint } from "../../ssh/connect";
import { checkCapacity, vmFootprintMiB } from "./capacity";
import type { BuiltImage } from "./image";
import { generateEd25519 } from "../keys";
import { freeLoopbackPort } from "./ports";
import { isAlive, isOurProcess, residentKiB, terminate } from "./processes";
import { egressIntact, egressNamespace, ensureEgressTable, setUpEgress, tearDownEgress, egressUnavailable } from "./egress";
import { InternetNotOfferedError } from "./network";
import { hostsFile, seedFile } from "../images/seed";
import { SessionId, listSessionDirs, readState, sessionDir, writeState, type SessionState, type VmRecord } from "./state";
import { isSwitchAlive, startSwitch, stopSwitch } from "./switch";
import { recipeByName, DEBIAN_BASE_RECIPE, type ImageRecipe } from "../images/recipe";
import { LAB_START, snapshotHost } from "./snapshots";
import { readTemplate, templatePaths, type TemplateRecord } from "./templates";
import { SshExecPool } from "../../ssh/exec";
import { killProcessesUnder, recoveryOps } from "./recovery";
import { savedStateOps } from "./saved-states";
import type { QemuCore, Runtime } from "./session-core";
import { templateOps } from "./template-sets";
import {
  ensureOverlay,
  loadVmState,
  resetVm,
  saveVmState,
  serialMark,
  setVmNice,
  startVm,
  vmPaths,
  waitForSsh,
  type Accel,
  type VmConfig,
  type VmProcess,
} from "./vm";

/** Guest RAM per VM of the default image, MiB (recipe.ts `machine`: each variant has its own size). */
export const DEFAULT_MEMORY_MIB = DEBIAN_BASE_RECIPE.machine.memoryMiB;
/**
 * How long a VM may take from start to answering SSH, in ms. Measured under TCG on 2 cores:
 * one VM 25-35 s, three at once 45-60 s; generous for a loaded host.
 */
export const BOOT_TIMEOUT_MS = 240_000;
/** How long a killed VM or switch gets between SIGTERM and SIGKILL, in ms (QEMU exits at once on SIGTERM). */
const KILL_GRACE_MS = 3_000;
/**
 * Machines booting at once per host core. A TCG boot keeps a core busy for ~30 CPU-seconds; with
 * more boots than cores' worth at once every boot stretches past its SSH limit (measured: a start
 * failed after "SSH not ready within 240 s" at load 30 on 2 cores). Learners' boots beyond it wait
 * in the start queue; a background boot (a pool spare) waits while any boot runs.
 */
const MAX_BOOTING_PER_CORE = 2;
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
  /** Guest RAM per VM, MiB, for every variant; unset: each image variant's own (recipe.ts `machine`). */
  memoryMiB?: number;
  /** tcg (software, works everywhere) or kvm (only where a real timed boot showed it works). */
  accel?: Accel;
  log: Logger;
  /** Start-to-SSH limit per VM, ms. */
  bootTimeoutMs?: number;
  /** Machines booting at once for learners (CPU admission; restores from saved states do not count); default MAX_BOOTING_PER_CORE per core, at least one 3-VM set. */
  maxBooting?: number;
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
  savePrepared(sessionId: string, machines: readonly ProvisionedMachine[], labVersion: string): Promise<void>;
  restorePrepared(request: MachineRequest & { labVersion: string }): Promise<ProvisionedMachine[] | null>;
  markLabStart(sessionId: string, machines: readonly ProvisionedMachine[]): Promise<void>;
  health(sessionId: string, machines: readonly ProvisionedMachine[]): Promise<MachineHealth[]>;
  reboot(sessionId: string, machine: ProvisionedMachine): Promise<void>;
  reset(sessionId: string, machine: ProvisionedMachine): Promise<{ atLabStart: boolean }>;
  /** Saves a running machine's whole state (memory and disk) as snapshot TAG; for `labs test`. */
  saveState(sessionId: string, machine: ProvisionedMachine, tag: string): Promise<void>;
  /**
   * A reboot from inside the guest: `ask` requests it (e.g. `systemctl reboot` over SSH); resolves
   * when the new boot says it is ready (guest.ts) and answers SSH. The QEMU process stays.
   */
  guestReboot(sessionId: string, machine: ProvisionedMachine, ask: () => Promise<void>): Promise<void>;
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

export function qemuProvider(options: QemuProviderOptions): QemuProvider {
  const accel = options.accel ?? "tcg";
  /** What one VM of a variant gets (recipe.ts), the memory override applied. */
  const sizeOf = (variant: string | undefined): ImageRecipe["machine"] => {
    const size = variant ? recipeByName(variant).machine : DEBIAN_BASE_RECIPE.machine;
    return { vcpus: size.vcpus, memoryMiB: options.memoryMiB ?? size.memoryMiB };
  };
  const memoryMiB = sizeOf(undefined).memoryMiB;
  /** SSH exec for the fix-up of restored machines (snapshots.ts). */
  const exec = new SshExecPool();
  const maxBooting = options.maxBooting ?? Math.max(3, MAX_BOOTING_PER_CORE * os.cpus().length);
  /** Sessions whose machines boot now (from the image, not from a saved state), by session id. */
  const booting = new Map<string, { vms: number; background: boolean }>();

  /** Why another boot of `vms` machines may not start now (CPU admission), or null. */
  function bootRefusal(vms: number, background: boolean): string | null {
    let all = 0;
    let foreground = 0;
    for (const b of booting.values()) {
      all += b.vms;
      if (!b.background) foreground += b.vms;
    }
    if (background && all > 0) return `${all} machines are booting; a spare waits`;
    if (!background && foreground > 0 && foreground + vms > maxBooting)
      return `${foreground} machines are booting (at most ${maxBooting} at once on this host)`;
    return null;
  }
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
    void next
      .finally(() => {
        if (sessionLocks.get(sessionId) === next) sessionLocks.delete(sessionId);
      })
      .catch(() => undefined);
    return next;
  }

  function withCapacity<T>(fn: () => Promise<T>): Promise<T> {
    const step = capacityLock.catch(() => undefined).then(fn);
    capacityLock = step;
    return step;
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
      vcpus: state.vcpus,
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
      log.warn(
        { sessionId: runtime.state.sessionId, machine: vm.name, qemuPid: vm.pid, exit },
        "qemu provider: VM stopped (guest poweroff or crash)",
      );
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
  async function startRecord(
    runtime: Runtime,
    record: VmRecord,
    reusePort: boolean,
    nice = 0,
    loadvm?: string,
    incoming?: string,
  ): Promise<VmProcess> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await startVm({ ...vmConfig(runtime.state, record), nice, loadvm, incoming });
      } catch (error) {
        if (reusePort || attempt >= PORT_ATTEMPTS || !HOSTFWD_TAKEN.test((error as Error).message)) throw error;
        record.sshPort = await freeLoopbackPort();
        log.info({ machine: record.name, port: record.sshPort }, "qemu provider: SSH port was taken; retrying with another");
      }
    }
  }

  function create(request: MachineRequest): Promise<ProvisionedMachine[]> {
    return startSession(request);
  }

  /**
   * A new session's machines: booted from the image, or, with `template`, started from the
   * template's saved states on overlays of its disks (no boot, the lab already set up) and then
   * given their own identity (templates.ts).
   */
  async function startSession(request: MachineRequest, template?: { dir: string; record: TemplateRecord }): Promise<ProvisionedMachine[]> {
    const sessionId = SessionId.parse(request.sessionId);
    const names = [...request.machines];
    if (names.length === 0 || names.length > MAX_MACHINES)
      throw new Error(`a session needs 1..${MAX_MACHINES} machines (got ${names.length})`);
    for (const name of names) {
      if (!MACHINE_NAME.test(name)) throw new Error(`machine name ${JSON.stringify(name)} must be a lowercase hostname (≤31 characters)`);
    }
    if (new Set(names).size !== names.length) throw new Error(`machine names repeat: ${names.join(", ")}`);
    if (request.internet) {
      const unavailable = await egressUnavailable();
      if (unavailable) throw new InternetNotOfferedError(request.labSlug, unavailable);
    }
    const dir = sessionDir(options.dataDir, sessionId);
    const image = template
      ? template.record.image
      : request.image && options.imageFor
        ? await options.imageFor(request.image)
        : options.image;
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
      const size = template ? { vcpus: template.record.vcpus, memoryMiB: template.record.memoryMiB } : sizeOf(request.image);
      // A boot takes CPU; a start from a template's saved state hardly any.
      const runtime = await reserve(
        sessionId,
        request.labSlug,
        names,
        dir,
        image,
        request.internet === true,
        size,
        template ? undefined : { background: request.background === true },
      );
      if (template) {
        // The template's devices as they were saved: a restored guest keeps its NICs' MACs and SMBIOS uuid.
        runtime.state.template = template.dir;
        for (const record of runtime.state.vms) {
          const saved = template.record.vms.find((v) => v.name === record.name)!;
          Object.assign(record, { eth1Mac: saved.eth1Mac, eth1Address: saved.eth1Address, uuid: saved.uuid });
        }
      }
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
            await ensureOverlay(template ? templatePaths(template.dir, record.name).disk : runtime.state.image.base, paths.overlay);
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
            const incoming = template ? templatePaths(template.dir, record.name).state : undefined;
            const vm = await startRecord(runtime, record, false, request.background ? BACKGROUND_NICE : 0, undefined, incoming);
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
            const vm = runtime.vms.get(record.name)!;
            if (template) await giveOwnIdentity(runtime, record, vm, template.record, hostKeys.get(record.name)!);
            else await waitForSsh(vm, endpointOf(runtime.state, record), bootTimeoutMs);
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
      } finally {
        booting.delete(sessionId);
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
    size: ImageRecipe["machine"],
    boot?: { background: boolean },
  ): Promise<Runtime> {
    const step = capacityLock
      .catch(() => undefined)
      .then(async () => {
        const check = await checkCapacity(names.length, size.memoryMiB, await committedMiB());
        if (!check.fits) throw noCapacity(sessionId, check);
        const busy = boot ? bootRefusal(names.length, boot.background) : null;
        if (busy) {
          log.info({ sessionId, busy }, "qemu provider: no room to boot now");
          throw new NoCapacityError(`起動中のマシンが多いため、順番を待っています（${busy}）`);
        }
        if (boot) booting.set(sessionId, { vms: names.length, background: boot.background });
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
            snapshots: [],
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
            memoryMiB: size.memoryMiB,
            vcpus: size.vcpus,
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
   * Puts one machine back to the lab's start. With a `lab-start` snapshot (markLabStart) it is
   * restored (`atLabStart`: the lab's setup is done); without one the machine goes back to the
   * image's first boot: QEMU is ended, its overlay replaced by a fresh one on the base, and it
   * boots with the same seed (hostname, eth1, host key, login key), and the caller runs the lab's
   * setup. Either way pinned keys and the session's endpoints stay valid.
   */
  async function reset(sessionId: string, machine: ProvisionedMachine): Promise<{ atLabStart: boolean }> {
    const { id, name } = locate(sessionId, machine);
    return serialised(id, async () => {
      const runtime = await runtimeOrThrow(id);
      const record = runtime.state.vms.find((r) => r.name === name);
      if (!record) throw new Error(`session ${id} has no machine ${name}`);
      const started = Date.now();
      if (await usableSnapshot(runtime.state, record, LAB_START)) {
        try {
          await restoreLabStart(runtime, record);
          log.info({ sessionId: id, machine: name, ms: Date.now() - started }, "qemu provider: machine restored to the lab's start");
          return { atLabStart: true };
        } catch (error) {
          log.warn(
            { sessionId: id, machine: name, err: (error as Error).message },
            "qemu provider: restoring the lab's start failed; resetting to a fresh disk",
          );
        }
      }
      // A machine started from the lab's template starts from it again, with its own identity.
      const template = runtime.state.template ? await readTemplate(runtime.state.template) : null;
      if (template && template.snapshotHost === (await snapshotHost(runtime.state.accel))) {
        try {
          await restartFromTemplate(runtime, record, runtime.state.template!, template);
          log.info({ sessionId: id, machine: name, ms: Date.now() - started }, "qemu provider: machine restarted from the lab's template");
          return { atLabStart: true };
        } catch (error) {
          log.warn(
            { sessionId: id, machine: name, err: (error as Error).message },
            "qemu provider: restarting from the lab's template failed; resetting to a fresh disk",
          );
        }
      }
      runtime.vms.delete(record.name); // its exit is expected, not a crash
      if (record.pid > 0) await terminate(record.pid, vmPaths(record.dir).pidFile, KILL_GRACE_MS);
      const paths = vmPaths(record.dir);
      await fs.rm(paths.overlay, { force: true });
      record.snapshots = [];
      await ensureOverlay(runtime.state.image.base, paths.overlay);
      if (runtime.state.internet) await ensureEgress(runtime);
      const vm = await startRecord(runtime, record, true);
      record.pid = vm.pid;
      watch(runtime, vm);
      await save(runtime);
      await waitForSsh(vm, endpointOf(runtime.state, record), bootTimeoutMs);
      log.info({ sessionId: id, machine: name, ms: Date.now() - started }, "qemu provider: machine reset to a fresh disk");
      return { atLabStart: false };
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

  async function guestReboot(sessionId: string, machine: ProvisionedMachine, ask: () => Promise<void>): Promise<void> {
    const { id, name } = locate(sessionId, machine);
    const runtime = await runtimeOrThrow(id);
    const vm = runtime.vms.get(name);
    const record = runtime.state.vms.find((r) => r.name === name);
    if (!vm || vm.hasExited() || !record) throw new Error(`session ${id}: machine ${name} is not running`);
    const mark = await serialMark(vm);
    await ask();
    await waitForSsh(vm, endpointOf(runtime.state, record), bootTimeoutMs, mark);
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

  const core: QemuCore = {
    dataDir: options.dataDir,
    image: options.image,
    imageFor: options.imageFor,
    accel,
    log,
    exec,
    bootTimeoutMs,
    runtimes,
    serialised,
    withCapacity,
    committedMiB,
    noCapacity,
    save,
    endpointOf,
    provisioned,
    watch,
    ensureEgress,
    startRecord,
    runtimeOrThrow,
    sessionOf,
    teardown,
  };
  const { usableSnapshot, markLabStart, restoreLabStart, suspend, resume } = savedStateOps(core);
  const templates = templateOps(core, startSession);
  const { giveOwnIdentity, savePrepared, restartFromTemplate } = templates;

  /**
   * A new set from the lab's template. A pool spare (background) also saves its lab start right
   * away (~1 s per VM, nobody waits): a reset is then a `loadvm` in place (seconds) instead of a
   * restart from the template (bench/lab-start.ts: 12.9 s).
   */
  async function restorePrepared(request: MachineRequest & { labVersion: string }): Promise<ProvisionedMachine[] | null> {
    const machines = await templates.restorePrepared(request);
    if (machines && request.background) await markLabStart(request.sessionId, machines);
    return machines;
  }
  const { adoptOrCleanup } = recoveryOps(core);

  return {
    name: "qemu",
    create,
    destroy,
    health,
    reboot,
    reset,
    markLabStart,
    savePrepared,
    restorePrepared,
    saveState: (sessionId, machine, tag) => vmState(sessionId, machine, (vm) => saveVmState(vm, tag)),
    loadState: (sessionId, machine, tag) => vmState(sessionId, machine, (vm) => loadVmState(vm, tag)),
    guestReboot,
    suspend,
    resume,
    promote,
    adoptOrCleanup,
    list,
    machinesOf,
  };
}
