/**
 * What each lab VM gets, per image variant (recipe.ts names the variants): used by the QEMU
 * provider, the warm pool and the capacity math. Plain data, so the capacity page reads it
 * without the image builder's code.
 */

export interface MachineSize {
  /** Virtual CPUs (QEMU -smp). */
  vcpus: number;
  /** Guest RAM, MiB. */
  memoryMiB: number;
}

/** The size of a variant not listed here. */
export const DEFAULT_MACHINE_SIZE: MachineSize = { vcpus: 1, memoryMiB: 512 };

export const MACHINE_SIZES: Readonly<Record<string, MachineSize>> = {
  "debian-base": DEFAULT_MACHINE_SIZE,
  // kubeadm's preflight refuses fewer than 2 CPUs and less than ~1.7 GB on the control plane;
  // workers get the same so a lab may move roles between machines.
  "k8s-v1.31": { vcpus: 2, memoryMiB: 2048 },
  // Ansible (the controller on controlplane) forks a Python per host and task: 1 GiB.
  "kubespray-v2.26.0": { vcpus: 1, memoryMiB: 1024 },
};

export function machineSize(variant: string): MachineSize {
  return MACHINE_SIZES[variant] ?? DEFAULT_MACHINE_SIZE;
}
