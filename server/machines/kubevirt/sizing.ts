/**
 * How big a lab VM is on the fleet, per image variant, and what its virt-launcher pod asks the
 * cluster for (what a namespace ResourceQuota counts).
 */
import { recipeByName } from "../images/recipe";
import { machineSize } from "../sizes";

export interface VmSize {
  /** Virtual CPUs the guest sees (spec.domain.cpu.cores). */
  cores: number;
  /** Guest RAM, MiB (spec.domain.memory.guest). */
  memoryMiB: number;
  /** Root disk, GiB: the golden image's filesystem size (recipe.ts diskGiB) is the floor. */
  diskGiB: number;
}

/**
 * A variant's VM size: vCPUs and guest RAM from server/machines/sizes.ts (the QEMU provider's and the
 * capacity page's too), the root disk from the variant's recipe (its filesystem's size).
 */
export function sizeOf(variant: string): VmSize {
  const recipe = recipeByName(variant); // throws naming the known variants
  const size = machineSize(variant);
  return { cores: size.vcpus, memoryMiB: size.memoryMiB, diskGiB: recipe.diskGiB };
}

/**
 * virt-launcher's memory beyond the guest's, MiB, by KubeVirt's own formula
 * (kubevirt/kubevirt pkg/virt-controller/services/renderresources.go GetMemoryOverhead, constants in
 * template.go): 220 MiB fixed (virt-launcher-monitor 25, virt-launcher 100, virtlogd 25, virtqemud
 * 40, qemu 30), 8 MiB per vCPU, 8 MiB for the IOThread, guest RAM / 512 for page tables, rounded
 * up. The graphics device's 32 MiB is not counted: our VMs have none (autoattachGraphicsDevice:
 * false). 1 vCPU + 512 MiB: 237 MiB; 2 vCPU + 2 GiB: 248 MiB.
 */
export const LAUNCHER_FIXED_OVERHEAD_MIB = 220;
export const LAUNCHER_PER_VCPU_MIB = 8;
export const LAUNCHER_IOTHREAD_MIB = 8;
export const PAGE_TABLE_DIVISOR = 512;

export function launcherOverheadMiB(size: Pick<VmSize, "cores" | "memoryMiB">): number {
  return (
    LAUNCHER_FIXED_OVERHEAD_MIB +
    LAUNCHER_PER_VCPU_MIB * size.cores +
    LAUNCHER_IOTHREAD_MIB +
    Math.ceil(size.memoryMiB / PAGE_TABLE_DIVISOR)
  );
}

/** Overcommit ratios the operator chose (config.ts LABDECK_KUBEVIRT_*_OVERCOMMIT); 1 = none. */
export interface Overcommit {
  /** vCPUs per requested CPU: 4 means each vCPU requests 250m. */
  cpu: number;
  /** Guest RAM per requested RAM: 1.5 means a 2 GiB guest requests 1,366 MiB. */
  memory: number;
}

/** What one VM's spec requests (spec.domain.resources.requests), before KubeVirt adds its overhead. */
export interface VmRequests {
  /** CPU, millicores. */
  cpuMilli: number;
  /** Memory, MiB. */
  memoryMiB: number;
}

export function vmRequests(size: VmSize, overcommit: Overcommit): VmRequests {
  return { cpuMilli: Math.ceil((size.cores * 1000) / overcommit.cpu), memoryMiB: Math.ceil(size.memoryMiB / overcommit.memory) };
}

/** What the VM's virt-launcher pod counts against a ResourceQuota: the requests plus KubeVirt's overhead. */
export function podRequests(size: VmSize, overcommit: Overcommit): VmRequests {
  const requests = vmRequests(size, overcommit);
  return { cpuMilli: requests.cpuMilli, memoryMiB: requests.memoryMiB + launcherOverheadMiB(size) };
}
