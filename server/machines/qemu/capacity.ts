/**
 * Whether this host can hold another machine set's VMs: the kernel's MemAvailable, minus a reserve for
 * the platform itself, minus what already-started VMs will still grow into (a booting 512 MiB VM
 * shows ~150 MiB resident and ends at ~560 MiB).
 */
import fs from "node:fs/promises";

/** Memory left for the platform, its database and the page cache, MiB. */
export const HOST_RESERVE_MIB = 2 * 1024;
/**
 * Resident memory of a VM relative to its guest RAM: QEMU itself, the 128 MiB TCG translation
 * cache, device buffers (measured: 540-580 MiB resident for -m 512, i.e. ~1.1x).
 */
export const VM_OVERHEAD_FACTOR = 1.15;

/** MemAvailable from /proc/meminfo, MiB. */
export async function memAvailableMiB(): Promise<number> {
  const info = await fs.readFile("/proc/meminfo", "utf8");
  const match = /^MemAvailable:\s+(\d+) kB$/m.exec(info);
  if (!match) throw new Error("/proc/meminfo has no MemAvailable line");
  return Math.floor(Number(match[1]) / 1024);
}

/** Expected resident size of one VM with `memoryMiB` of guest RAM, MiB. */
export function vmFootprintMiB(memoryMiB: number): number {
  return Math.ceil(memoryMiB * VM_OVERHEAD_FACTOR);
}

export interface CapacityCheck {
  fits: boolean;
  /** Everything in MiB. */
  available: number;
  reserve: number;
  /** Growth still to come from VMs already started or being started. */
  committed: number;
  needed: number;
}

/**
 * `vms` more VMs of `memoryMiB` fit when MemAvailable - reserve - committed >= their footprint.
 * `committed` is the sum over live VMs of (footprint - current resident size), never negative.
 */
export async function checkCapacity(vms: number, memoryMiB: number, committed: number): Promise<CapacityCheck> {
  const available = await memAvailableMiB();
  const needed = vms * vmFootprintMiB(memoryMiB);
  return { fits: available - HOST_RESERVE_MIB - committed >= needed, available, reserve: HOST_RESERVE_MIB, committed, needed };
}
