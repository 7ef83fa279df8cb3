/**
 * Saved machine states of the QEMU provider's machine sets (snapshots.ts has what they are): the
 * lab's start after its setup (markLabStart; a reset restores it), and a suspend that saves the
 * running machines so the resume continues them.
 */
import { type ProvisionedMachine } from "../provider";
import type { Admission } from "./admission";
import { checkCapacity } from "./capacity";
import { endpointOf, provisioned, type MachineSet } from "./machine-set";
import { isAlive } from "./processes";
import type { QemuRuntime } from "./runtime";
import { afterRestore, LAB_START, snapshotHost, SUSPENDED } from "./snapshots";
import type { SetState, VmRecord } from "./state";
import { isSwitchAlive, startSwitch, stopSwitch } from "./switch";
import { deleteVmState, loadVmState, saveVmState, saveVmStateAndQuit, stopVm, waitForSsh, waitRunning, type VmProcess } from "./vm";

/** How long a suspended VM's guest gets to shut down cleanly (ACPI) when its state cannot be saved, in ms. */
const SUSPEND_SHUTDOWN_MS = 60_000;

/** Whether the record's snapshot TAG was written by this host's QEMU and accelerator. */
export async function usableSnapshot(state: SetState, record: VmRecord, tag: string): Promise<boolean> {
  return record.snapshots.includes(tag) && state.snapshotHost === (await snapshotHost(state.accel));
}

/** Snapshots of another QEMU build or accelerator are of no use: forgotten, and this host noted as the writer. */
async function claimSnapshots(state: SetState): Promise<void> {
  const host = await snapshotHost(state.accel);
  if (state.snapshotHost !== host) {
    for (const record of state.vms) record.snapshots = [];
    state.snapshotHost = host;
  }
}

/**
 * Saves each running machine's state as `lab-start` (snapshots.ts), right after the lab's setup:
 * a later reset of the machine restores it instead of booting and setting up again. The guests
 * pause for the save (about a second under TCG).
 */
export async function markLabStart(runtime: QemuRuntime, sessionId: string, machines: readonly ProvisionedMachine[]): Promise<void> {
  const id = runtime.setIdOf(sessionId, machines);
  await runtime.serialised(id, async () => {
    const set = runtime.setOrThrow(id);
    const started = Date.now();
    await claimSnapshots(set.state);
    await Promise.all(
      set.state.vms.map(async (record) => {
        const vm = set.vms.get(record.name);
        if (!vm || vm.hasExited()) return;
        await saveVmState(vm, LAB_START);
        if (!record.snapshots.includes(LAB_START)) record.snapshots.push(LAB_START);
      }),
    );
    await runtime.save(set);
    runtime.log.info({ sessionId: id, ms: Date.now() - started }, "qemu provider: lab start saved");
  });
}

/** `loadvm lab-start` in the running QEMU (or a start from it), then the guest's fix-up with a new terminal holder. */
export async function restoreLabStart(runtime: QemuRuntime, set: MachineSet, record: VmRecord): Promise<void> {
  const current = set.vms.get(record.name);
  let vm: VmProcess;
  if (current && !current.hasExited() && (await isAlive(current.pid))) {
    await loadVmState(current, LAB_START);
    vm = current;
  } else {
    vm = await runtime.powerOn(set, record, { loadvm: LAB_START });
  }
  await waitRunning(vm);
  const endpoint = endpointOf(set.state, record);
  await afterRestore(runtime.exec, endpoint, true, { vm, readyWithinMs: runtime.bootTimeoutMs });
}

/**
 * Powers an idle set's machines off, keeping everything: each running VM is paused, its state
 * saved as `suspended` (snapshots.ts) and QEMU ended, so resume continues without a boot and the
 * learner's shells are still there. A VM whose save fails is shut down cleanly (ACPI) instead and
 * boots on resume.
 */
export async function suspend(runtime: QemuRuntime, sessionId: string, machines: readonly ProvisionedMachine[]): Promise<void> {
  const id = runtime.setIdOf(sessionId, machines);
  await runtime.serialised(id, async () => {
    const set = runtime.setOrThrow(id);
    if (set.state.phase === "suspended") return;
    set.state.phase = "suspended";
    await claimSnapshots(set.state);
    await runtime.save(set);
    const started = Date.now();
    const saved = await Promise.all(set.state.vms.map((record) => saveAndQuit(runtime, set, record)));
    set.vms.clear();
    await runtime.save(set);
    if (await isSwitchAlive(set.state.switch)) await stopSwitch(set.state.switch);
    runtime.log.info(
      { sessionId: id, saved: saved.filter(Boolean).length, ms: Date.now() - started },
      "qemu provider: session suspended (VMs saved and off)",
    );
  });
}

/** One VM of a suspending set saved as `suspended` and ended (true), or shut down or already off (false). */
async function saveAndQuit(runtime: QemuRuntime, set: MachineSet, record: VmRecord): Promise<boolean> {
  const vm = set.vms.get(record.name);
  record.snapshots = record.snapshots.filter((tag) => tag !== SUSPENDED);
  if (!vm || vm.hasExited()) return false;
  try {
    await saveVmStateAndQuit(vm, SUSPENDED);
    record.snapshots.push(SUSPENDED);
    return true;
  } catch (error) {
    runtime.log.warn(
      { sessionId: set.state.sessionId, machine: record.name, err: (error as Error).message },
      "qemu provider: saving the machine's state failed; shutting it down",
    );
    await stopVm(vm, SUSPEND_SHUTDOWN_MS);
    return false;
  }
}

/**
 * Powers a suspended set's machines on again: from their saved state where there is one (no
 * boot; the clock is stepped and the guest's random generator reseeded), else by booting from the
 * disk.
 */
export async function resume(
  runtime: QemuRuntime,
  admission: Admission,
  sessionId: string,
  machines: readonly ProvisionedMachine[],
): Promise<ProvisionedMachine[]> {
  const id = runtime.setIdOf(sessionId, machines);
  return runtime.serialised(id, async () => {
    const set = runtime.setOrThrow(id);
    if (set.state.phase === "ready" && set.state.vms.every((r) => set.vms.get(r.name)?.hasExited() === false)) {
      return provisioned(set.state);
    }
    const started = Date.now();
    // Capacity check and spawn in one step, as in create: no two starts race past the check.
    const restored = await admission.withCapacity(() => powerOnAgain(runtime, admission, set));
    set.state.phase = "ready";
    await runtime.save(set);
    await Promise.all(
      set.state.vms.map(async (record) => {
        const endpoint = endpointOf(set.state, record);
        const loaded = restored.has(record.name);
        if (loaded) await waitRunning(set.vms.get(record.name)!);
        if (loaded)
          await afterRestore(runtime.exec, endpoint, false, { vm: set.vms.get(record.name)!, readyWithinMs: runtime.bootTimeoutMs });
        else await waitForSsh(set.vms.get(record.name)!, endpoint, runtime.bootTimeoutMs);
      }),
    );
    runtime.log.info({ sessionId: id, restored: [...restored], ms: Date.now() - started }, "qemu provider: session resumed");
    // The saved state is used up: its disk space goes back (delvm), after the learner has the machines.
    void runtime.serialised(id, () => dropSuspendedStates(runtime, set, restored)).catch(() => undefined);
    return provisioned(set.state);
  });
}

/**
 * Inside the capacity step: the set's switch and namespace again, and each VM that is down started
 * from its `suspended` state where usable, else booted; returns the machines restored from a state.
 */
async function powerOnAgain(runtime: QemuRuntime, admission: Admission, set: MachineSet): Promise<Set<string>> {
  const id = set.state.sessionId;
  const restored = new Set<string>();
  const down = set.state.vms.filter((r) => set.vms.get(r.name)?.hasExited() !== false);
  const check = await checkCapacity(down.length, set.state.memoryMiB, await admission.committedMiB());
  if (!check.fits) throw admission.noCapacity(id, check);
  if (!(await isSwitchAlive(set.state.switch))) {
    const sw = await startSwitch(set.dir);
    set.state.switch = { socket: sw.socket, pidFile: sw.pidFile, pid: sw.pid };
    await runtime.save(set);
  }
  if (set.state.internet) await runtime.ensureEgress(set);
  await Promise.all(
    down.map(async (record) => {
      // Its old port when free (the platform has it stored), else a new one.
      let vm: VmProcess | undefined;
      if (await usableSnapshot(set.state, record, SUSPENDED)) {
        vm = await runtime.startVm(set, record, { reusePort: false, loadvm: SUSPENDED }).catch((error: Error) => {
          runtime.log.warn(
            { sessionId: id, machine: record.name, err: error.message },
            "qemu provider: the saved state did not load; booting from the disk",
          );
          return undefined;
        });
        if (vm) restored.add(record.name);
      }
      vm ??= await runtime.startVm(set, record, { reusePort: false });
      record.snapshots = record.snapshots.filter((tag) => tag !== SUSPENDED);
      record.pid = vm.pid;
      runtime.watch(set, vm);
    }),
  );
  return restored;
}

/** Deletes the used-up `suspended` states of the restored machines (delvm); a failure is only logged. */
async function dropSuspendedStates(runtime: QemuRuntime, set: MachineSet, restored: ReadonlySet<string>): Promise<void> {
  for (const name of restored) {
    const vm = set.vms.get(name);
    if (vm && !vm.hasExited())
      await deleteVmState(vm, SUSPENDED).catch((error: Error) =>
        runtime.log.debug({ sessionId: set.state.sessionId, machine: name, err: error.message }, "qemu provider: delvm failed"),
      );
  }
}
