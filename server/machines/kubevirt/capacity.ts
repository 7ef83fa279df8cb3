/**
 * Capacity on the fleet: the namespace's ResourceQuotas (what the operator allows Labdeck), read
 * before a machine set's VMs are made. The API server's quota admission stays the authority (two
 * starts may both pass this check; the later one's pods are then refused "exceeded quota", which
 * the provider turns into the same NoCapacityError): this check saves creating and deleting
 * objects in the common case and gives the learner the answer at once.
 */
import { z } from "zod";
import { NoCapacityError } from "../provider";

/** The namespace's quota has no room: the learner reads errors.noCapacityQuota, operators `detail` (logged). */
export class QuotaExceededError extends NoCapacityError {
  constructor(readonly detail: string) {
    super({ key: "noCapacityQuota" }, `the namespace's ResourceQuota has no room: ${detail}`);
  }
}

/** What a machine set's VMs add to the namespace's usage, in the units below. */
export interface SetUsage {
  /** CPU requests, millicores. */
  cpuMilli: number;
  /** Memory requests, MiB (guest requests + virt-launcher overhead). */
  memoryMiB: number;
  /** Root disks' requests, GiB. */
  storageGiB: number;
  /** One virt-launcher pod, VM, PVC, Secret and Service per machine. */
  machines: number;
}

const ResourceQuotaItem = z.looseObject({
  metadata: z.looseObject({ name: z.string() }),
  status: z
    .looseObject({ hard: z.record(z.string(), z.string()).optional(), used: z.record(z.string(), z.string()).optional() })
    .optional(),
});

/** A quota's resource name → what the set adds to it, in the quota's base unit (cores, bytes, counts). */
function additions(usage: SetUsage): Record<string, number> {
  const cores = usage.cpuMilli / 1000;
  const memory = usage.memoryMiB * 2 ** 20;
  const storage = usage.storageGiB * 2 ** 30;
  return {
    cpu: cores,
    "requests.cpu": cores,
    memory,
    "requests.memory": memory,
    "requests.storage": storage,
    pods: usage.machines,
    "count/pods": usage.machines,
    persistentvolumeclaims: usage.machines,
    "count/persistentvolumeclaims": usage.machines,
    secrets: usage.machines,
    "count/secrets": usage.machines,
    services: usage.machines,
    "count/services": usage.machines,
    "count/virtualmachines.kubevirt.io": usage.machines,
    "count/virtualmachineinstances.kubevirt.io": usage.machines,
    "count/datavolumes.cdi.kubevirt.io": usage.machines,
  };
}

/** Each quota line the set would exceed, as "quota/resource: used + added > hard"; empty when it fits. */
export function quotaShortfalls(quotas: readonly unknown[], usage: SetUsage): string[] {
  const adds = additions(usage);
  const problems: string[] = [];
  for (const raw of quotas) {
    const quota = ResourceQuotaItem.safeParse(raw);
    if (!quota.success) continue;
    const hard = quota.data.status?.hard ?? {};
    const used = quota.data.status?.used ?? {};
    for (const [resource, limit] of Object.entries(hard)) {
      const add = adds[resource];
      if (add === undefined) continue;
      const now = parseQuantity(used[resource] ?? "0");
      if (now + add > parseQuantity(limit) + 1e-9)
        problems.push(`${quota.data.metadata.name}/${resource}: ${used[resource] ?? "0"} used + ${format(resource, add)} > ${limit}`);
    }
  }
  return problems;
}

function format(resource: string, value: number): string {
  if (/memory|storage/.test(resource)) return `${Math.ceil(value / 2 ** 20)}Mi`;
  if (/cpu/.test(resource)) return `${Math.round(value * 1000)}m`;
  return String(value);
}

const SUFFIX: Record<string, number> = {
  "": 1,
  m: 1e-3,
  k: 1e3,
  M: 1e6,
  G: 1e9,
  T: 1e12,
  P: 1e15,
  E: 1e18,
  Ki: 2 ** 10,
  Mi: 2 ** 20,
  Gi: 2 ** 30,
  Ti: 2 ** 40,
  Pi: 2 ** 50,
  Ei: 2 ** 60,
};

/** A Kubernetes quantity ("250m", "1.5Gi", "2", "1e3") in base units; throws on anything else. */
export function parseQuantity(quantity: string): number {
  const match = /^([+-]?(?:\d+(?:\.\d*)?|\.\d+))(?:([eE][+-]?\d+)|(Ki|Mi|Gi|Ti|Pi|Ei|m|k|M|G|T|P|E))?$/.exec(quantity.trim());
  if (!match) throw new Error(`not a Kubernetes quantity: ${JSON.stringify(quantity)}`);
  const value = Number(match[1]);
  if (match[2]) return value * 10 ** Number(match[2].slice(1));
  return value * SUFFIX[match[3] ?? ""]!;
}
