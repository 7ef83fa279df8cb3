/**
 * The local QEMU machine provider: each request gets a machine set of its own (machine-set.ts:
 * one VM per machine name) on this host, booted from a built image (image.ts), wired to a private
 * vde_switch, reachable by SSH on loopback ports with keys made for the set. Everything a later
 * platform process needs to adopt or remove a set is in `<dataDir>/sessions/<setId>/state.json`
 * (state.ts).
 *
 *   <dataDir>/sessions/<setId>/state.json
 *                              switch/, switch.pid      vde_switch (switch.ts)
 *                              vm-<name>/               one VM (vm.ts)
 *
 * A set whose lab asks for the internet also gets a network namespace and veth (egress.ts), named
 * after the set; its VMs run in it and answer SSH on the namespace's address.
 *
 * The provider is its parts: the running sets (runtime.ts), admission (admission.ts), create
 * (create.ts), the rest of the lifecycle (lifecycle.ts), saved states (saved-states.ts), lab
 * templates (template-sets.ts), recovery after a restart (recovery.ts) and the listing
 * (inventory.ts).
 */
import path from "node:path";
import type { MachineProvider, MachineRequest, ProvisionedMachine, SpareRecord } from "../provider";
import { Admission } from "./admission";
import { createSet } from "./create";
import { listSets, machinesOf } from "./inventory";
import { destroy, guestReboot, health, promote, reboot, reset, withRunningVm } from "./lifecycle";
import { adoptOrCleanup, type RecoveryOptions } from "./recovery";
import { keepSpare, spares } from "./spares";
import { QemuRuntime, type RuntimeOptions } from "./runtime";
import { markLabStart, resume, suspend } from "./saved-states";
import { restorePrepared, savePrepared } from "./template-sets";
import { loadVmState, saveVmState } from "./vm";

export interface QemuProviderOptions extends RuntimeOptions {
  /** Machines booting at once for learners (CPU admission; restores from saved states do not count); default MAX_BOOTING_PER_CORE per core, at least one 3-VM set. */
  maxBooting?: number;
}

/**
 * The provider's methods are arrow properties: callers pass them on detached (a reboot callback),
 * as they could the functions of the object this class replaced.
 */
export class QemuProvider implements MachineProvider {
  readonly name = "qemu";
  private readonly runtime: QemuRuntime;
  private readonly admission: Admission;

  constructor(options: QemuProviderOptions) {
    this.runtime = new QemuRuntime(options);
    this.admission = new Admission(this.runtime, options.maxBooting);
    const { accel, log } = this.runtime;
    log.info(
      { accel, memoryMiB: this.runtime.sizeOf(undefined).memoryMiB, dataDir: path.resolve(options.dataDir) },
      `qemu provider: VMs use ${accel}`,
    );
  }

  readonly create = (request: MachineRequest): Promise<ProvisionedMachine[]> => createSet(this.runtime, this.admission, request);

  readonly destroy = (sessionId: string, _machines?: readonly ProvisionedMachine[]): Promise<void> => destroy(this.runtime, sessionId);

  readonly health = (sessionId: string, machines: readonly ProvisionedMachine[]) => health(this.runtime, sessionId, machines);

  readonly reboot = (sessionId: string, machine: ProvisionedMachine) => reboot(this.runtime, sessionId, machine);

  readonly reset = (sessionId: string, machine: ProvisionedMachine) => reset(this.runtime, sessionId, machine);

  readonly markLabStart = (sessionId: string, machines: readonly ProvisionedMachine[]) => markLabStart(this.runtime, sessionId, machines);

  readonly savePrepared = (sessionId: string, machines: readonly ProvisionedMachine[], labVersion: string) =>
    savePrepared(this.runtime, sessionId, machines, labVersion);

  readonly restorePrepared = (request: MachineRequest & { labVersion: string }) => restorePrepared(this.runtime, this.admission, request);

  /** Saves a running machine's whole state (memory and disk) as snapshot TAG; for `labs test`. */
  readonly saveState = (sessionId: string, machine: ProvisionedMachine, tag: string) =>
    withRunningVm(this.runtime, sessionId, machine, (vm) => saveVmState(vm, tag));

  /** Puts a running machine back to snapshot TAG; its SSH connections from before are dead. */
  readonly loadState = (sessionId: string, machine: ProvisionedMachine, tag: string) =>
    withRunningVm(this.runtime, sessionId, machine, (vm) => loadVmState(vm, tag));

  /**
   * A reboot from inside the guest: `ask` requests it (e.g. `systemctl reboot` over SSH); resolves
   * when the new boot says it is ready (guest.ts) and answers SSH. The QEMU process stays.
   */
  readonly guestReboot = (sessionId: string, machine: ProvisionedMachine, ask: () => Promise<void>) =>
    guestReboot(this.runtime, sessionId, machine, ask);

  readonly suspend = (sessionId: string, machines: readonly ProvisionedMachine[]) => suspend(this.runtime, sessionId, machines);

  readonly resume = (sessionId: string, machines: readonly ProvisionedMachine[]) =>
    resume(this.runtime, this.admission, sessionId, machines);

  readonly promote = (sessionId: string, machines: readonly ProvisionedMachine[]) => promote(this.runtime, sessionId, machines);

  readonly keepSpare = (sessionId: string, machines: readonly ProvisionedMachine[], spare: SpareRecord) =>
    keepSpare(this.runtime, sessionId, machines, spare);

  readonly spares = (except: ReadonlySet<string>) => spares(this.runtime, except);

  readonly adoptOrCleanup = (options?: RecoveryOptions) => adoptOrCleanup(this.runtime, options);

  /** Every machine set on disk under this data directory, with its processes' liveness. */
  readonly list = () => listSets(this.runtime);

  /** A set's machines as create returned them, from its state (for a CLI that did not create it). */
  readonly machinesOf = (sessionId: string) => machinesOf(this.runtime, sessionId);
}

export function qemuProvider(options: QemuProviderOptions): QemuProvider {
  return new QemuProvider(options);
}
