/**
 * The QEMU provider's running machine sets (machine-set.ts): the sets this process serves, one
 * operation at a time per set, and what every lifecycle step does to a set (start one of its VMs,
 * note a VM's exit, keep its network namespace, save its state, remove it). The provider's parts
 * (create.ts, lifecycle.ts, saved-states.ts, template-sets.ts, recovery.ts) work through it.
 */
import fs from "node:fs/promises";
import type { Logger } from "pino";
import type { ProvisionedMachine } from "../provider";
import { SshExecPool } from "../../ssh/exec";
import { DEBIAN_BASE_RECIPE, recipeByName, type ImageRecipe } from "../images/recipe";
import { egressIntact, egressNamespace, ensureEgressTable, setUpEgress, tearDownEgress } from "./egress";
import type { BuiltImage } from "./image";
import { vmConfig, type MachineSet } from "./machine-set";
import { freeLoopbackPort } from "./ports";
import { killProcessesUnder, terminate } from "./processes";
import { SetId, readState, setDir, writeState, type VmRecord } from "./state";
import { stopSwitch } from "./switch";
import { startVm, vmPaths, type Accel, type VmProcess } from "./vm";

/** Guest RAM per VM of the default image, MiB (recipe.ts `machine`: each variant has its own size). */
export const DEFAULT_MEMORY_MIB = DEBIAN_BASE_RECIPE.machine.memoryMiB;
/**
 * How long a VM may take from start to answering SSH, in ms. Measured under TCG on 2 cores:
 * one VM 25-35 s, three at once 45-60 s; generous for a loaded host.
 */
export const BOOT_TIMEOUT_MS = 240_000;
/** How long a killed VM or switch gets between SIGTERM and SIGKILL, in ms (QEMU exits at once on SIGTERM). */
export const KILL_GRACE_MS = 3_000;
/** Attempts to start a VM when its SSH forward port was taken by someone else meanwhile. */
const PORT_ATTEMPTS = 3;
/** QEMU's error when a hostfwd port is taken. */
const HOSTFWD_TAKEN = /Could not set up host forwarding rule/;

export type ImageFiles = Pick<BuiltImage, "base" | "kernel" | "initrd">;

export interface RuntimeOptions {
  dataDir: string;
  /** The built image new VMs boot (image.ts); without one the provider can only list, adopt and destroy. */
  image?: ImageFiles;
  /** Finds the built image of a variant a request names (lab.yaml `image`); else `image` is booted. */
  imageFor?: (variant: string) => Promise<ImageFiles | null>;
  /** Guest RAM per VM, MiB, for every variant; unset: each image variant's own (recipe.ts `machine`). */
  memoryMiB?: number;
  /** tcg (software, works everywhere) or kvm (only where a real timed boot showed it works). */
  accel?: Accel;
  log: Logger;
  /** Start-to-SSH limit per VM, ms. */
  bootTimeoutMs?: number;
}

/** How a VM of a set is started: its SSH port kept or chosen again, its priority, the saved state it continues from. */
export interface VmStart {
  /** Keep the recorded SSH port (the platform has it stored) instead of choosing another when it is taken. */
  reusePort: boolean;
  nice?: number;
  /** An internal snapshot to start from (`-loadvm`). */
  loadvm?: string;
  /** A migration stream file to start from (`-incoming`: a template's state). */
  incoming?: string;
}

export class QemuRuntime {
  readonly dataDir: string;
  readonly image?: ImageFiles;
  readonly imageFor?: (variant: string) => Promise<ImageFiles | null>;
  readonly accel: Accel;
  readonly log: Logger;
  readonly bootTimeoutMs: number;
  /** SSH exec for the fix-ups of restored machines (snapshots.ts, templates.ts). */
  readonly exec = new SshExecPool();
  /** The sets this process serves, by set id. */
  readonly sets = new Map<string, MachineSet>();
  private readonly memoryOverride?: number;
  /** One operation at a time per set (create, destroy, reboot, ...), in call order. */
  private readonly locks = new Map<string, Promise<unknown>>();

  constructor(options: RuntimeOptions) {
    this.dataDir = options.dataDir;
    this.image = options.image;
    this.imageFor = options.imageFor;
    this.memoryOverride = options.memoryMiB;
    this.accel = options.accel ?? "tcg";
    this.log = options.log.child({ provider: "qemu" });
    this.bootTimeoutMs = options.bootTimeoutMs ?? BOOT_TIMEOUT_MS;
  }

  /** What one VM of a variant gets (recipe.ts), the memory override applied. */
  sizeOf(variant: string | undefined): ImageRecipe["machine"] {
    const size = variant ? recipeByName(variant).machine : DEBIAN_BASE_RECIPE.machine;
    return { vcpus: size.vcpus, memoryMiB: this.memoryOverride ?? size.memoryMiB };
  }

  serialised<T>(setId: string, fn: () => Promise<T>): Promise<T> {
    const previous = this.locks.get(setId) ?? Promise.resolve();
    const next = previous.catch(() => undefined).then(fn);
    this.locks.set(setId, next);
    void next
      .finally(() => {
        if (this.locks.get(setId) === next) this.locks.delete(setId);
      })
      .catch(() => undefined);
    return next;
  }

  save(set: MachineSet): Promise<void> {
    return writeState(set.dir, set.state);
  }

  /** Tracks a started VM; notes its exit in the log (a learner's poweroff, a crash) unless the set is going away. */
  watch(set: MachineSet, vm: VmProcess): void {
    set.vms.set(vm.name, vm);
    void vm.exited.then((exit) => {
      if (set.destroying || set.state.phase === "suspended" || set.vms.get(vm.name) !== vm) return;
      this.log.warn(
        { sessionId: set.state.sessionId, machine: vm.name, qemuPid: vm.pid, exit },
        "qemu provider: VM stopped (guest poweroff or crash)",
      );
    });
  }

  /**
   * An internet set's namespace, veth and nftables table are in place: made when missing (first
   * start, or after a host reboot removed them), else the table is refreshed (idempotent). Call
   * before starting the set's VMs, once per batch (never concurrently for one set).
   */
  async ensureEgress(set: MachineSet): Promise<void> {
    const state = set.state;
    if (state.egress && (await egressIntact(state.egress))) return ensureEgressTable(this.log);
    const started = Date.now();
    state.egress = undefined;
    state.egress = await setUpEgress(this.dataDir, state.sessionId, this.log);
    await this.save(set);
    this.log.info(
      { sessionId: state.sessionId, ...state.egress, ms: Date.now() - started },
      "qemu provider: internet session namespace ready",
    );
  }

  /** Starts one VM of the set, choosing a new SSH port when its port turns out to be taken (unless `reusePort`). */
  async startVm(set: MachineSet, record: VmRecord, start: VmStart): Promise<VmProcess> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await startVm({ ...vmConfig(set.state, record), nice: start.nice ?? 0, loadvm: start.loadvm, incoming: start.incoming });
      } catch (error) {
        if (start.reusePort || attempt >= PORT_ATTEMPTS || !HOSTFWD_TAKEN.test((error as Error).message)) throw error;
        record.sshPort = await freeLoopbackPort();
        this.log.info({ machine: record.name, port: record.sshPort }, "qemu provider: SSH port was taken; retrying with another");
      }
    }
  }

  /**
   * Starts one VM of a set that is already up again on its recorded port (a reboot of a stopped
   * machine, a reset, a restore): the namespace ensured first, the new process tracked and saved.
   */
  async powerOn(set: MachineSet, record: VmRecord, from: Pick<VmStart, "loadvm" | "incoming"> = {}): Promise<VmProcess> {
    if (set.state.internet) await this.ensureEgress(set);
    const vm = await this.startVm(set, record, { reusePort: true, ...from });
    record.pid = vm.pid;
    this.watch(set, vm);
    await this.save(set);
    return vm;
  }

  /** Ends one VM of the set whose exit is expected (a reset, a restart from the template). */
  async stopExpected(set: MachineSet, record: VmRecord): Promise<void> {
    set.vms.delete(record.name); // its exit is expected, not a crash
    if (record.pid > 0) await terminate(record.pid, vmPaths(record.dir).pidFile, KILL_GRACE_MS);
  }

  setOrThrow(setId: string): MachineSet {
    const set = this.sets.get(setId);
    if (!set) throw new Error(`session ${setId} is not served by this qemu provider (unknown or not adopted)`);
    return set;
  }

  /**
   * The set and machine name a machine belongs to: from its providerRef ("<setId>/<name>"),
   * which stays right when a warm pool handed the set to a learner's session with another id;
   * else the session id given.
   */
  locate(sessionId: string, machine: Pick<ProvisionedMachine, "name" | "providerRef">): { id: string; name: string } {
    const [ref, name] = machine.providerRef.split("/");
    if (ref && name && SetId.safeParse(ref).success) return { id: ref, name };
    return { id: SetId.parse(sessionId), name: machine.name };
  }

  /** The set behind a session's machines (a pooled set keeps the pool's id in its providerRef). */
  setIdOf(sessionId: string, machines: readonly ProvisionedMachine[]): string {
    return machines[0] ? this.locate(sessionId, machines[0]).id : SetId.parse(sessionId);
  }

  /**
   * Removes a set completely: its VMs (killed: the disks are deleted anyway), its switch, any
   * process still naming its directory, the directory. Works from memory or from disk.
   */
  async teardown(setId: string): Promise<void> {
    const dir = setDir(this.dataDir, setId);
    const set = this.sets.get(setId);
    if (set) set.destroying = true;
    const exists = await fs.stat(dir).catch(() => null);
    if (exists) {
      const found = set ? { state: set.state } : await readState(dir);
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
      await killProcessesUnder(dir, KILL_GRACE_MS);
      // The namespace is named after the set: found even when the state file is not usable.
      await tearDownEgress(egressNamespace(this.dataDir, setId), "state" in found ? found.state.egress : undefined);
      await fs.rm(dir, { recursive: true, force: true });
    }
    this.sets.delete(setId);
  }
}
