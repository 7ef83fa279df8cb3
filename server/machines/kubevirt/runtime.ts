/**
 * What the KubeVirt provider's parts share: the cluster API, the fleet's settings, limits, one
 * lifecycle operation at a time per machine set, and the checks before a set's VMs are made (quota,
 * golden image). A machine set is what the provider made for one request (manifests.ts).
 */
import type { Logger } from "pino";
import { recipeByName } from "../images/recipe";
import { QuotaExceededError, quotaShortfalls, type SetUsage } from "./capacity";
import type { KubeApi } from "./cluster";
import { containerDiskImageHash } from "./containerdisk-recipe";
import { goldenDataVolume, quotaUsage, type FleetSettings } from "./manifests";

/** The variant a request without `image` boots. */
export const DEFAULT_VARIANT = "debian-base";
/**
 * How long a VM may take from create to answering SSH, ms: a CDI clone of the golden PVC (seconds
 * with a CSI clone, minutes with a host-assisted copy), pulling the kernel image once per node,
 * scheduling and a KVM boot (~10-20 s). Generous; the pool hides it from learners.
 */
export const BOOT_TIMEOUT_MS = 10 * 60_000;

export interface RuntimeOptions {
  api: KubeApi;
  settings: FleetSettings;
  /** The provider's logger (its name and namespace bound). */
  log: Logger;
  /** Recipe hash of a variant's containerDisk image; default: the fleet recipe's (containerdisk-recipe.ts). */
  imageHash?: (variant: string) => string;
  /** Create-to-SSH limit per set, ms. */
  bootTimeoutMs?: number;
}

export class KubevirtRuntime {
  readonly api: KubeApi;
  readonly settings: FleetSettings;
  readonly log: Logger;
  readonly bootTimeoutMs: number;
  readonly imageHash: (variant: string) => string;
  /** Golden images this process made sure of, by DataVolume name. */
  private readonly golden = new Set<string>();
  /** One lifecycle operation at a time per set (create, reboot, reset, suspend, destroy). */
  private readonly locks = new Map<string, Promise<unknown>>();

  constructor(options: RuntimeOptions) {
    this.api = options.api;
    this.settings = options.settings;
    this.log = options.log;
    this.bootTimeoutMs = options.bootTimeoutMs ?? BOOT_TIMEOUT_MS;
    this.imageHash = options.imageHash ?? ((variant: string) => containerDiskImageHash(recipeByName(variant)));
  }

  serialised<T>(setId: string, fn: () => Promise<T>): Promise<T> {
    const next = (this.locks.get(setId) ?? Promise.resolve()).catch(() => undefined).then(fn);
    this.locks.set(setId, next);
    void next
      .finally(() => {
        if (this.locks.get(setId) === next) this.locks.delete(setId);
      })
      .catch(() => undefined);
    return next;
  }

  /** Refuses (QuotaExceededError) `machines` more VMs of `variant` that the namespace's quotas have no room for. */
  async checkQuota(variant: string, machines: number): Promise<void> {
    const per = quotaUsage(this.settings, variant);
    const usage: SetUsage = {
      cpuMilli: per.cpuMilli * machines,
      memoryMiB: per.memoryMiB * machines,
      storageGiB: per.storageGiB * machines,
      machines,
    };
    const short = quotaShortfalls(await this.api.list("resourceQuotas"), usage);
    if (short.length > 0) throw new QuotaExceededError(short.join("; "));
  }

  /** The variant's golden PVC exists (made once; creating one that exists is fine). */
  async ensureGolden(variant: string, hash: string): Promise<void> {
    const dv = goldenDataVolume(this.settings, variant, hash);
    if (this.golden.has(dv.metadata.name)) return;
    await this.api.create("dataVolumes", dv, { alreadyExists: "ok" });
    this.golden.add(dv.metadata.name);
  }
}
