/**
 * What happens to a QEMU machine set and its machines after create (create.ts): destroy, health,
 * reboot, reset to the lab's start, saved states on demand, a reboot from inside the guest, and
 * priority (promote). Suspend and resume are saved-states.ts's.
 */
import fs from "node:fs/promises";
import type { MachineHealth, ProvisionedMachine } from "../provider";
import { endpointOf, type MachineSet } from "./machine-set";
import { isAlive } from "./processes";
import type { QemuRuntime } from "./runtime";
import { restoreLabStart, usableSnapshot } from "./saved-states";
import { LAB_START, snapshotHost } from "./snapshots";
import { SetId, writeState, type VmRecord } from "./state";
import { restartFromTemplate } from "./template-sets";
import { readTemplate } from "./templates";
import { ensureOverlay, resetVm, serialMark, setVmNice, vmPaths, waitForSsh, type VmProcess } from "./vm";

export async function destroy(runtime: QemuRuntime, sessionId: string): Promise<void> {
  const id = SetId.parse(sessionId);
  await runtime.serialised(id, () => runtime.teardown(id));
  runtime.log.info({ sessionId: id }, "qemu provider: session destroyed");
}

export async function health(runtime: QemuRuntime, sessionId: string, machines: readonly ProvisionedMachine[]): Promise<MachineHealth[]> {
  return Promise.all(
    machines.map(async (m): Promise<MachineHealth> => {
      const { id, name } = runtime.locate(sessionId, m);
      const set = runtime.sets.get(id);
      const record = set?.state.vms.find((r) => r.name === name);
      if (!set || !record) return { name: m.name, state: "unknown", detail: "no such VM in this provider" };
      const vm = set.vms.get(name);
      if (vm && !vm.hasExited() && (await isAlive(vm.pid))) return { name: m.name, state: "running" };
      return { name: m.name, state: "stopped", detail: "QEMU process has exited (guest poweroff or crash)" };
    }),
  );
}

/** The set and record of one machine, inside the set's lock; throws when the set or machine is unknown. */
function machineOf(runtime: QemuRuntime, id: string, name: string): { set: MachineSet; record: VmRecord } {
  const set = runtime.setOrThrow(id);
  const record = set.state.vms.find((r) => r.name === name);
  if (!record) throw new Error(`session ${id} has no machine ${name}`);
  return { set, record };
}

/** A hard reset when the machine runs, a fresh start on its port when it was powered off or crashed; resolves when SSH answers. */
export async function reboot(runtime: QemuRuntime, sessionId: string, machine: ProvisionedMachine): Promise<void> {
  const { id, name } = runtime.locate(sessionId, machine);
  await runtime.serialised(id, async () => {
    const { set, record } = machineOf(runtime, id, name);
    const current = set.vms.get(record.name);
    let vm: VmProcess;
    if (current && !current.hasExited() && (await isAlive(current.pid))) {
      await resetVm(current);
      vm = current;
      runtime.log.info({ sessionId: id, machine: record.name }, "qemu provider: hard reset");
    } else {
      // Same port as before: the platform has it stored with the machine.
      vm = await runtime.powerOn(set, record);
      runtime.log.info({ sessionId: id, machine: record.name, qemuPid: vm.pid }, "qemu provider: powered on again");
    }
    await waitForSsh(vm, endpointOf(set.state, record), runtime.bootTimeoutMs);
  });
}

/**
 * Puts one machine back to the lab's start. With a `lab-start` snapshot (markLabStart) it is
 * restored (`atLabStart`: the lab's setup is done); a machine started from the lab's template
 * starts from it again; otherwise the machine goes back to the image's first boot: QEMU is ended,
 * its overlay replaced by a fresh one on the base, and it boots with the same seed (hostname,
 * eth1, host key, login key), and the caller runs the lab's setup. Either way pinned keys and the
 * set's endpoints stay valid.
 */
export async function reset(runtime: QemuRuntime, sessionId: string, machine: ProvisionedMachine): Promise<{ atLabStart: boolean }> {
  const { id, name } = runtime.locate(sessionId, machine);
  return runtime.serialised(id, async () => {
    const { set, record } = machineOf(runtime, id, name);
    const started = Date.now();
    const done = (how: string) => runtime.log.info({ sessionId: id, machine: name, ms: Date.now() - started }, how);
    const failed = (error: unknown, how: string) => runtime.log.warn({ sessionId: id, machine: name, err: (error as Error).message }, how);
    if (await usableSnapshot(set.state, record, LAB_START)) {
      try {
        await restoreLabStart(runtime, set, record);
        done("qemu provider: machine restored to the lab's start");
        return { atLabStart: true };
      } catch (error) {
        failed(error, "qemu provider: restoring the lab's start failed; resetting to a fresh disk");
      }
    }
    // A machine started from the lab's template starts from it again, with its own identity.
    const template = set.state.template ? await readTemplate(set.state.template) : null;
    if (template && template.snapshotHost === (await snapshotHost(set.state.accel))) {
      try {
        await restartFromTemplate(runtime, set, record, set.state.template!, template);
        done("qemu provider: machine restarted from the lab's template");
        return { atLabStart: true };
      } catch (error) {
        failed(error, "qemu provider: restarting from the lab's template failed; resetting to a fresh disk");
      }
    }
    await freshDisk(runtime, set, record);
    done("qemu provider: machine reset to a fresh disk");
    return { atLabStart: false };
  });
}

/** The machine ended, its overlay replaced by a fresh one on the base image, booted again; resolves when SSH answers. */
async function freshDisk(runtime: QemuRuntime, set: MachineSet, record: VmRecord): Promise<void> {
  await runtime.stopExpected(set, record);
  const paths = vmPaths(record.dir);
  await fs.rm(paths.overlay, { force: true });
  record.snapshots = [];
  await ensureOverlay(set.state.image.base, paths.overlay);
  const vm = await runtime.powerOn(set, record);
  await waitForSsh(vm, endpointOf(set.state, record), runtime.bootTimeoutMs);
}

/** Runs `act` on a running machine's QEMU, inside its set's lock (saveState, loadState). */
export async function withRunningVm(
  runtime: QemuRuntime,
  sessionId: string,
  machine: ProvisionedMachine,
  act: (vm: VmProcess) => Promise<void>,
): Promise<void> {
  const { id, name } = runtime.locate(sessionId, machine);
  await runtime.serialised(id, async () => {
    const set = runtime.setOrThrow(id);
    const vm = set.vms.get(name);
    if (!vm || vm.hasExited()) throw new Error(`session ${id}: machine ${name} is not running`);
    await act(vm);
  });
}

/** A reboot from inside the guest (`ask`); resolves when the new boot says it is ready and answers SSH. */
export async function guestReboot(
  runtime: QemuRuntime,
  sessionId: string,
  machine: ProvisionedMachine,
  ask: () => Promise<void>,
): Promise<void> {
  const { id, name } = runtime.locate(sessionId, machine);
  const set = runtime.setOrThrow(id);
  const vm = set.vms.get(name);
  const record = set.state.vms.find((r) => r.name === name);
  if (!vm || vm.hasExited() || !record) throw new Error(`session ${id}: machine ${name} is not running`);
  const mark = await serialMark(vm);
  await ask();
  await waitForSsh(vm, endpointOf(set.state, record), runtime.bootTimeoutMs, mark);
}

/**
 * A spare set handed to a learner: its spare record ends first (a restart must never offer it
 * again), then its VMs get normal CPU priority.
 */
export async function promote(runtime: QemuRuntime, sessionId: string, machines: readonly ProvisionedMachine[]): Promise<void> {
  const id = runtime.setIdOf(sessionId, machines);
  const set = runtime.sets.get(id);
  if (!set) return;
  if (set.state.spare) {
    await runtime.serialised(id, async () => {
      delete set.state.spare;
      await writeState(set.dir, set.state);
    });
  }
  await Promise.all([...set.vms.values()].map((vm) => setVmNice(vm, 0).catch(() => undefined)));
}
