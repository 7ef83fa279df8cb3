/**
 * What happens to a KubeVirt machine set after create (create.ts):
 *
 *   reboot   running: restart subresource, grace 0 (a hard reset; the disk stays); off: start
 *   reset    the VirtualMachine deleted with its root disk (foreground) and made again from its own
 *            spec: a fresh clone, the same Secret (name, keys, addresses) and Service
 *   suspend  stop subresource (ACPI, then killed after the grace); resume: start again
 *   destroy  every object with the set's label
 */
import type { MachineHealth, ProvisionedMachine } from "../provider";
import { KubeResourceMissingError } from "./cluster";
import { LABEL_VARIANT, setSelector, vmName, type KubeObject } from "./manifests";
import { DEFAULT_VARIANT, type KubevirtRuntime } from "./runtime";
import { RETRY_PAUSE_MS, sleep, waitForSsh } from "./ssh-probe";
import { FINAL_PHASES, Named, running, uids, Vmi, waitForVmis } from "./vmis";

/** Deletes every object of the set (by label); idempotent. */
export async function destroySet(runtime: KubevirtRuntime, setId: string): Promise<void> {
  const { api } = runtime;
  const selector = setSelector(setId);
  // VMs first: their VMIs, pods and root disks go with them (owner references). A kind whose API
  // is not served has no objects (a start that failed on it); the others are still deleted.
  const failures: Error[] = [];
  for (const resource of ["virtualMachines", "services", "secrets", "networkPolicies", "networkAttachmentDefinitions"] as const) {
    try {
      const items = await api.list(resource, selector);
      await Promise.all(items.map((item) => api.delete(resource, Named.parse(item).metadata.name)));
    } catch (error) {
      if (!(error instanceof KubeResourceMissingError)) failures.push(error as Error);
    }
  }
  if (failures.length > 0) throw failures[0];
}

export async function health(runtime: KubevirtRuntime, setId: string, machines: readonly ProvisionedMachine[]): Promise<MachineHealth[]> {
  const { api } = runtime;
  return Promise.all(
    machines.map(async (m): Promise<MachineHealth> => {
      const vmi = Vmi.safeParse(await api.get("virtualMachineInstances", vmName(setId, m.name)));
      if (vmi.success && !FINAL_PHASES.has(vmi.data.status?.phase ?? ""))
        return { name: m.name, state: "running", detail: vmi.data.status?.phase };
      if (vmi.success || (await api.get("virtualMachines", vmName(setId, m.name))) !== null) {
        return { name: m.name, state: "stopped", detail: vmi.success ? vmi.data.status?.phase : "no instance" };
      }
      return { name: m.name, state: "unknown", detail: "no VirtualMachine" };
    }),
  );
}

export function reboot(runtime: KubevirtRuntime, setId: string, machine: ProvisionedMachine): Promise<void> {
  const { api } = runtime;
  return runtime.serialised(setId, async () => {
    const deadline = Date.now() + runtime.bootTimeoutMs;
    const name = vmName(setId, machine.name);
    const before = await uids(api, setId, [machine.name]);
    const vmi = Vmi.safeParse(await api.get("virtualMachineInstances", name));
    const alive = vmi.success && !FINAL_PHASES.has(vmi.data.status?.phase ?? "");
    // A hard reset of a running guest (grace 0: the disk keeps what reached it, as QEMU's
    // system_reset); a powered-off or crashed one is started again.
    await api.vmAction(name, alive ? "restart" : "start", alive ? { gracePeriodSeconds: 0 } : {});
    await waitForVmis(runtime, setId, [machine.name], running(before), deadline, `${machine.name}: back after a reboot`);
    await waitForSsh([machine], deadline);
  });
}

export function reset(runtime: KubevirtRuntime, setId: string, machine: ProvisionedMachine): Promise<{ atLabStart: boolean }> {
  const { api } = runtime;
  return runtime.serialised(setId, async () => {
    const deadline = Date.now() + runtime.bootTimeoutMs;
    const vm = await vmObject(runtime, setId, machine.name);
    const name = vm.metadata.name;
    // Foreground: the VM object stays until its VMI and root DataVolume are gone, so the new VM
    // below clones a fresh disk rather than finding the old one.
    await api.delete("virtualMachines", name, { foreground: true });
    await waitGone(runtime, name, deadline);
    await api.create("virtualMachines", {
      apiVersion: vm.apiVersion,
      kind: vm.kind,
      metadata: { name, namespace: api.namespace, labels: vm.metadata.labels, annotations: vm.metadata.annotations },
      spec: vm.spec,
    });
    await api.vmAction(name, "start");
    await waitForVmis(runtime, setId, [machine.name], running(), deadline, `${machine.name}: back after a reset`);
    await waitForSsh([machine], deadline);
    // A fresh clone at its first boot: the caller runs the lab's setup again (no saved lab start here).
    return { atLabStart: false };
  });
}

export function suspend(runtime: KubevirtRuntime, setId: string, machines: readonly ProvisionedMachine[]): Promise<void> {
  const { api } = runtime;
  return runtime.serialised(setId, async () => {
    const deadline = Date.now() + runtime.bootTimeoutMs;
    const names = machines.map((m) => m.name);
    const state = await uids(api, setId, names);
    await Promise.all(
      names.filter((n) => state.get(n) !== undefined).map((n) => api.vmAction(vmName(setId, n), "stop").catch(ignoreNotRunning)),
    );
    await waitForVmis(
      runtime,
      setId,
      names,
      (vmi) => vmi === undefined || FINAL_PHASES.has(vmi.status?.phase ?? ""),
      deadline,
      `session ${setId}: VMs stopped`,
    );
  });
}

export function resume(runtime: KubevirtRuntime, setId: string, machines: readonly ProvisionedMachine[]): Promise<ProvisionedMachine[]> {
  const { api } = runtime;
  return runtime.serialised(setId, async () => {
    const deadline = Date.now() + runtime.bootTimeoutMs;
    const names = machines.map((m) => m.name);
    const variant = (await vmObject(runtime, setId, names[0]!)).metadata.labels?.[LABEL_VARIANT] ?? DEFAULT_VARIANT;
    const before = await uids(api, setId, names);
    const stopped = names.filter((n) => before.get(n) === undefined);
    if (stopped.length > 0) await runtime.checkQuota(variant, stopped.length);
    await Promise.all(stopped.map((n) => api.vmAction(vmName(setId, n), "start")));
    await waitForVmis(runtime, setId, names, running(), deadline, `session ${setId}: VMs running again`);
    await waitForSsh(machines, deadline);
    // The Services keep their addresses: the machines are what they were.
    return [...machines];
  });
}

async function vmObject(runtime: KubevirtRuntime, setId: string, name: string): Promise<KubeObject> {
  const vm = await runtime.api.get("virtualMachines", vmName(setId, name));
  if (!vm) throw new Error(`machine ${name} of session ${setId} has no VirtualMachine`);
  return vm as KubeObject;
}

async function waitGone(runtime: KubevirtRuntime, name: string, deadline: number): Promise<void> {
  while ((await runtime.api.get("virtualMachines", name)) !== null) {
    if (Date.now() > deadline) throw new Error(`${name} was not deleted in time`);
    await sleep(RETRY_PAUSE_MS);
  }
}

/** A stop of a VM that is not running answers 409 (Conflict); for suspend that is done already. */
function ignoreNotRunning(error: unknown): void {
  if ((error as { status?: number }).status === 409) return;
  throw error;
}
