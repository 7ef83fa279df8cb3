/**
 * Saved machine states of the QEMU provider's sessions (snapshots.ts has what they are): the
 * lab's start after its setup (markLabStart; a reset restores it), and a suspend that saves the
 * running machines so the resume continues them.
 */
import { type ProvisionedMachine } from "../provider";
import { checkCapacity } from "./capacity";
import type { QemuCore, Runtime } from "./session-core";
import { afterRestore, LAB_START, snapshotHost, SUSPENDED } from "./snapshots";
import type { SessionState, VmRecord } from "./state";
import { isSwitchAlive, startSwitch, stopSwitch } from "./switch";
import { deleteVmState, loadVmState, saveVmState, saveVmStateAndQuit, stopVm, waitForSsh, waitRunning, type VmProcess } from "./vm";
import { isAlive } from "./processes";

/** How long a suspended VM's guest gets to shut down cleanly (ACPI) when its state cannot be saved, in ms. */
const SUSPEND_SHUTDOWN_MS = 60_000;

export function savedStateOps(core: QemuCore) {
  const {
    exec,
    bootTimeoutMs,
    log,
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
  } = core;

  /** Whether the record's snapshot TAG was written by this host's QEMU and accelerator. */
  async function usableSnapshot(state: SessionState, record: VmRecord, tag: string): Promise<boolean> {
    return record.snapshots.includes(tag) && state.snapshotHost === (await snapshotHost(state.accel));
  }

  /**
   * Saves each running machine's state as `lab-start` (snapshots.ts), right after the lab's setup:
   * a later reset of the machine restores it instead of booting and setting up again. The guests
   * pause for the save (about a second under TCG).
   */
  async function markLabStart(sessionId: string, machines: readonly ProvisionedMachine[]): Promise<void> {
    const id = sessionOf(sessionId, machines);
    await serialised(id, async () => {
      const runtime = await runtimeOrThrow(id);
      const started = Date.now();
      const host = await snapshotHost(runtime.state.accel);
      if (runtime.state.snapshotHost !== host) {
        for (const record of runtime.state.vms) record.snapshots = [];
        runtime.state.snapshotHost = host;
      }
      await Promise.all(
        runtime.state.vms.map(async (record) => {
          const vm = runtime.vms.get(record.name);
          if (!vm || vm.hasExited()) return;
          await saveVmState(vm, LAB_START);
          if (!record.snapshots.includes(LAB_START)) record.snapshots.push(LAB_START);
        }),
      );
      await save(runtime);
      log.info({ sessionId: id, ms: Date.now() - started }, "qemu provider: lab start saved");
    });
  }

  /** `loadvm lab-start` in the running QEMU (or a start from it), then the guest's fix-up with a new terminal holder. */
  async function restoreLabStart(runtime: Runtime, record: VmRecord): Promise<void> {
    const current = runtime.vms.get(record.name);
    let vm: VmProcess;
    if (current && !current.hasExited() && (await isAlive(current.pid))) {
      await loadVmState(current, LAB_START);
      vm = current;
    } else {
      if (runtime.state.internet) await ensureEgress(runtime);
      vm = await startRecord(runtime, record, true, 0, LAB_START);
      record.pid = vm.pid;
      watch(runtime, vm);
      await save(runtime);
    }
    await waitRunning(vm);
    const endpoint = endpointOf(runtime.state, record);
    await waitForSsh(vm, endpoint, bootTimeoutMs, "up");
    await afterRestore(exec, endpoint, true);
  }

  /**
   * Powers an idle session's machines off, keeping everything: each running VM is paused, its
   * state saved as `suspended` (snapshots.ts) and QEMU ended, so resume continues without a boot
   * and the learner's shells are still there. A VM whose save fails is shut down cleanly (ACPI)
   * instead and boots on resume.
   */
  async function suspend(sessionId: string, machines: readonly ProvisionedMachine[]): Promise<void> {
    const id = sessionOf(sessionId, machines);
    await serialised(id, async () => {
      const runtime = await runtimeOrThrow(id);
      if (runtime.state.phase === "suspended") return;
      runtime.state.phase = "suspended";
      const host = await snapshotHost(runtime.state.accel);
      if (runtime.state.snapshotHost !== host) {
        for (const record of runtime.state.vms) record.snapshots = [];
        runtime.state.snapshotHost = host;
      }
      await save(runtime);
      const started = Date.now();
      const saved = await Promise.all(
        runtime.state.vms.map(async (record) => {
          const vm = runtime.vms.get(record.name);
          record.snapshots = record.snapshots.filter((tag) => tag !== SUSPENDED);
          if (!vm || vm.hasExited()) return false;
          try {
            await saveVmStateAndQuit(vm, SUSPENDED);
            record.snapshots.push(SUSPENDED);
            return true;
          } catch (error) {
            log.warn(
              { sessionId: id, machine: record.name, err: (error as Error).message },
              "qemu provider: saving the machine's state failed; shutting it down",
            );
            await stopVm(vm, SUSPEND_SHUTDOWN_MS);
            return false;
          }
        }),
      );
      runtime.vms.clear();
      await save(runtime);
      if (await isSwitchAlive(runtime.state.switch)) await stopSwitch(runtime.state.switch);
      log.info(
        { sessionId: id, saved: saved.filter(Boolean).length, ms: Date.now() - started },
        "qemu provider: session suspended (VMs saved and off)",
      );
    });
  }

  /**
   * Powers a suspended session's machines on again: from their saved state where there is one
   * (no boot; the clock is stepped and the guest's random generator reseeded), else by booting
   * from the disk.
   */
  async function resume(sessionId: string, machines: readonly ProvisionedMachine[]): Promise<ProvisionedMachine[]> {
    const id = sessionOf(sessionId, machines);
    return serialised(id, async () => {
      const runtime = await runtimeOrThrow(id);
      if (runtime.state.phase === "ready" && runtime.state.vms.every((r) => runtime.vms.get(r.name)?.hasExited() === false)) {
        return provisioned(runtime.state);
      }
      const started = Date.now();
      const restored = new Set<string>();
      // Capacity check and spawn in one step, as in create: no two starts race past the check.
      await withCapacity(async () => {
        const down = runtime.state.vms.filter((r) => runtime.vms.get(r.name)?.hasExited() !== false);
        const check = await checkCapacity(down.length, runtime.state.memoryMiB, await committedMiB());
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
            let vm: VmProcess | undefined;
            if (await usableSnapshot(runtime.state, record, SUSPENDED)) {
              vm = await startRecord(runtime, record, false, 0, SUSPENDED).catch((error: Error) => {
                log.warn(
                  { sessionId: id, machine: record.name, err: error.message },
                  "qemu provider: the saved state did not load; booting from the disk",
                );
                return undefined;
              });
              if (vm) restored.add(record.name);
            }
            vm ??= await startRecord(runtime, record, false);
            record.snapshots = record.snapshots.filter((tag) => tag !== SUSPENDED);
            record.pid = vm.pid;
            watch(runtime, vm);
          }),
        );
      });
      runtime.state.phase = "ready";
      await save(runtime);
      await Promise.all(
        runtime.state.vms.map(async (record) => {
          const endpoint = endpointOf(runtime.state, record);
          const loaded = restored.has(record.name);
          if (loaded) await waitRunning(runtime.vms.get(record.name)!);
          await waitForSsh(runtime.vms.get(record.name)!, endpoint, bootTimeoutMs, loaded ? "up" : undefined);
          if (loaded) await afterRestore(exec, endpoint, false);
        }),
      );
      log.info({ sessionId: id, restored: [...restored], ms: Date.now() - started }, "qemu provider: session resumed");
      // The saved state is used up: its disk space goes back (delvm), after the learner has the machines.
      void serialised(id, async () => {
        for (const name of restored) {
          const vm = runtime.vms.get(name);
          if (vm && !vm.hasExited())
            await deleteVmState(vm, SUSPENDED).catch((error: Error) =>
              log.debug({ sessionId: id, machine: name, err: error.message }, "qemu provider: delvm failed"),
            );
        }
      }).catch(() => undefined);
      return provisioned(runtime.state);
    });
  }

  return { usableSnapshot, markLabStart, restoreLabStart, suspend, resume };
}
