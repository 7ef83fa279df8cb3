/**
 * The KubeVirt machine provider: each request's machine set (manifests.ts) as VirtualMachines in
 * one namespace of a Kubernetes cluster, reached over SSH at each VM's Service address from inside
 * the cluster, with keys Labdeck made for the set and host keys it pinned before the first boot.
 *
 *   create   quota check → golden PVC ensured → NAD, NetworkPolicy, per machine Secret + Service +
 *            VirtualMachine → start → VMIs Running (watch) → SSH answers with the pinned key
 *            (create.ts)
 *   reboot, reset, suspend, resume, destroy: lifecycle.ts
 *   adopt    after a restart: sets whose session the database keeps are served again, the rest
 *            deleted (recovery.ts)
 *
 * Everything a later process needs is in the cluster (labels, annotations, the Secret), none of it
 * in this process: any replica can destroy, reboot or adopt any set.
 */
import type { MachineProvider, MachineRequest, ProvisionedMachine } from "../provider";
import { KubePermissionError, RESOURCES, type KubeApi } from "./cluster";
import { createSet } from "./create";
import { destroySet, health, reboot, reset, resume, suspend } from "./lifecycle";
import { adoptOrCleanup } from "./recovery";
import { KubevirtRuntime, type RuntimeOptions } from "./runtime";

export const PROVIDER_NAME = "kubevirt";

export type KubevirtProviderOptions = RuntimeOptions;

/**
 * The provider's methods are arrow properties: callers pass them on detached (a reboot callback),
 * as they could the functions of the object this class replaced.
 */
export class KubevirtProvider implements MachineProvider {
  readonly name = PROVIDER_NAME;
  private readonly runtime: KubevirtRuntime;

  constructor(options: KubevirtProviderOptions) {
    this.runtime = new KubevirtRuntime({
      ...options,
      log: options.log.child({ provider: PROVIDER_NAME, namespace: options.api.namespace }),
    });
  }

  /** Refuses to start when KubeVirt, CDI or Multus are missing or the account lacks a permission; one sentence each. */
  readonly preflight = (): Promise<void> => preflight(this.runtime.api);

  readonly create = (request: MachineRequest): Promise<ProvisionedMachine[]> =>
    this.runtime.serialised(request.sessionId, () => createSet(this.runtime, request));

  readonly destroy = (sessionId: string, _machines?: readonly ProvisionedMachine[]): Promise<void> =>
    this.runtime.serialised(sessionId, () => destroySet(this.runtime, sessionId));

  readonly health = (sessionId: string, machines: readonly ProvisionedMachine[]) => health(this.runtime, sessionId, machines);

  readonly reboot = (sessionId: string, machine: ProvisionedMachine) => reboot(this.runtime, sessionId, machine);

  readonly reset = (sessionId: string, machine: ProvisionedMachine) => reset(this.runtime, sessionId, machine);

  readonly suspend = (sessionId: string, machines: readonly ProvisionedMachine[]) => suspend(this.runtime, sessionId, machines);

  readonly resume = (sessionId: string, machines: readonly ProvisionedMachine[]) => resume(this.runtime, sessionId, machines);

  readonly adoptOrCleanup = (options?: { keep?: (sessionId: string) => boolean }) => adoptOrCleanup(this.runtime, options);
}

export function kubevirtProvider(options: KubevirtProviderOptions): KubevirtProvider {
  return new KubevirtProvider(options);
}

async function preflight(api: KubeApi): Promise<void> {
  const problems: string[] = [];
  for (const resource of ["virtualMachines", "dataVolumes", "networkAttachmentDefinitions"] as const) {
    if (!(await api.serves(resource))) problems.push(RESOURCES[resource].missing);
  }
  if (problems.length === 0) {
    const denied = await api.missingAccess();
    if (denied.length > 0) {
      problems.push(
        new KubePermissionError(
          `Labdeck's Kubernetes account lacks ${denied.join(", ")} in namespace ${api.namespace}: apply the Role in deploy/kubernetes/base/rbac.yaml to it`,
        ).message,
      );
    }
  }
  if (problems.length > 0) throw new Error([...new Set(problems)].join("; "));
}
