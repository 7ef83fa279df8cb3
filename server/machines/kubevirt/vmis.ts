/**
 * What the KubeVirt provider reads of a set's VirtualMachineInstances, and the wait for them to
 * reach a state (running, stopped): a list, then a watch from its resourceVersion until every
 * machine is there or the deadline passes.
 */
import { z } from "zod";
import { NoCapacityError } from "../provider";
import { QuotaExceededError } from "./capacity";
import type { KubeApi } from "./cluster";
import { setSelector, vmName } from "./manifests";
import type { KubevirtRuntime } from "./runtime";

const Meta = z.looseObject({
  name: z.string(),
  uid: z.string().optional(),
  labels: z.record(z.string(), z.string()).optional(),
  annotations: z.record(z.string(), z.string()).optional(),
});
const Condition = z.looseObject({ type: z.string(), status: z.string(), reason: z.string().optional(), message: z.string().optional() });
/** What the provider reads of a VirtualMachineInstance (kubevirt.io/v1 VirtualMachineInstanceStatus). */
export const Vmi = z.looseObject({
  metadata: Meta,
  status: z
    .looseObject({ phase: z.string().optional(), conditions: z.array(Condition).optional(), nodeName: z.string().optional() })
    .optional(),
});
export type Vmi = z.infer<typeof Vmi>;
/** Any object, read for its name and annotations. */
export const Named = z.looseObject({ metadata: Meta });

/** VMI phases after which the guest is gone (a poweroff, a crash, a stop). */
export const FINAL_PHASES = new Set(["Succeeded", "Failed"]);

/** Whether a machine's VMI is where a wait wants it; may throw to end the wait (a refused pod). */
export type VmiReady = (vmi: Vmi | undefined, name: string) => boolean;

/**
 * Watches the set's VMIs until `ready` holds for every machine name; throws what `ready` throws
 * (a refused pod), or after the deadline with the last state seen.
 */
export async function waitForVmis(
  runtime: KubevirtRuntime,
  setId: string,
  names: readonly string[],
  ready: VmiReady,
  deadline: number,
  what: string,
): Promise<void> {
  const state = new Map<string, Vmi>();
  const done = () => names.every((name) => ready(state.get(vmName(setId, name)), name));
  let failure: unknown = null;
  const check = (): boolean => {
    try {
      return done();
    } catch (error) {
      failure = error;
      return true;
    }
  };
  while (Date.now() < deadline) {
    const { items, resourceVersion } = await runtime.api.listWithVersion("virtualMachineInstances", setSelector(setId));
    state.clear();
    for (const item of items) {
      const vmi = Vmi.safeParse(item);
      if (vmi.success) state.set(vmi.data.metadata.name, vmi.data);
    }
    if (check()) break;
    const aborted = await watchUntil(runtime, setId, resourceVersion, deadline, state, check);
    if (aborted && (failure || done())) break;
  }
  if (failure) throw failure;
  if (!done()) {
    const seen = names.map((n) => `${n}: ${describe(state.get(vmName(setId, n)))}`).join("; ");
    if (/Unschedulable|Insufficient/i.test(seen))
      throw new NoCapacityError({ key: "noCapacityNodes" }, `${what}: no node can take the VMs (${seen})`);
    throw new Error(`${what}: not done within ${Math.round(runtime.bootTimeoutMs / 1000)} s (${seen})`);
  }
}

/** Follows the set's VMIs into `state` from `resourceVersion` until `check` holds (true) or the watch or deadline ends (false). */
async function watchUntil(
  runtime: KubevirtRuntime,
  setId: string,
  resourceVersion: string | undefined,
  deadline: number,
  state: Map<string, Vmi>,
  check: () => boolean,
): Promise<boolean> {
  const abort = new AbortController();
  const timer = setTimeout(() => abort.abort(), Math.max(0, deadline - Date.now()));
  await runtime.api
    .watch("virtualMachineInstances", { labelSelector: setSelector(setId), resourceVersion, signal: abort.signal }, (event) => {
      const vmi = Vmi.safeParse(event.object);
      if (!vmi.success) return;
      if (event.type === "DELETED") state.delete(vmi.data.metadata.name);
      else if (event.type === "ADDED" || event.type === "MODIFIED") state.set(vmi.data.metadata.name, vmi.data);
      if (check()) abort.abort();
    })
    .catch((error: Error) => {
      if (!abort.signal.aborted) runtime.log.debug({ err: error.message }, "VMI watch ended; listing again");
    })
    .finally(() => clearTimeout(timer));
  return abort.signal.aborted;
}

/** Running, and not a VMI from before (`previous` uids): what a start, restart or resume waits for. */
export function running(previous: ReadonlyMap<string, string | undefined> = new Map()): VmiReady {
  return (vmi, name) => {
    if (!vmi) return false;
    refuseQuota(vmi);
    if (previous.get(name) !== undefined && previous.get(name) === vmi.metadata.uid) return false;
    if (vmi.status?.phase === "Failed") throw new Error(`${name}: the VM failed to start (${describe(vmi)})`);
    return vmi.status?.phase === "Running";
  };
}

/** Each machine's current VMI uid (undefined: none). */
export async function uids(api: KubeApi, setId: string, names: readonly string[]): Promise<Map<string, string | undefined>> {
  const found = await Promise.all(
    names.map(async (name) => [name, Vmi.safeParse(await api.get("virtualMachineInstances", vmName(setId, name)))] as const),
  );
  return new Map(found.map(([name, vmi]) => [name, vmi.success ? vmi.data.metadata.uid : undefined]));
}

/** A refused virt-launcher pod ("exceeded quota") ends the wait at once. */
function refuseQuota(vmi: Vmi): void {
  for (const condition of vmi.status?.conditions ?? []) {
    if (condition.status === "False" && /exceeded quota/i.test(condition.message ?? ""))
      throw new QuotaExceededError(`${vmi.metadata.name}: ${condition.message}`);
  }
}

function describe(vmi: Vmi | undefined): string {
  if (!vmi) return "no instance";
  const problems = (vmi.status?.conditions ?? [])
    .filter((c) => c.status === "False" && c.reason)
    .map((c) => `${c.type} ${c.reason}: ${c.message ?? ""}`.trim());
  return [vmi.status?.phase ?? "no phase", ...problems].join(", ");
}
