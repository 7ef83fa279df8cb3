/**
 * Whether the host takes another machine set now (QEMU provider): memory (capacity.ts: what is
 * free against what the tracked VMs will still grow into) and, for a boot, the CPU (boots in
 * flight per core). One check and the registration or spawn it allows at a time, so no two starts
 * race past the check.
 */
import os from "node:os";
import { NoCapacityError } from "../provider";
import { checkCapacity, vmFootprintMiB, type CapacityCheck } from "./capacity";
import { residentKiB } from "./processes";
import type { QemuRuntime } from "./runtime";

/**
 * Machines booting at once per host core. A TCG boot keeps a core busy for ~30 CPU-seconds; with
 * more boots than cores' worth at once every boot stretches past its SSH limit (measured: a start
 * failed after "SSH not ready within 240 s" at load 30 on 2 cores). Learners' boots beyond it wait
 * in the start queue; a background boot (a pool spare) waits while any boot runs.
 */
const MAX_BOOTING_PER_CORE = 2;

/** A boot that counts against the CPU admission: a spare's (background) or a learner's. */
export interface Boot {
  background: boolean;
}

export class Admission {
  /** Sets whose machines boot now (from the image, not from a saved state), by set id. */
  private readonly booting = new Map<string, { vms: number } & Boot>();
  /** Capacity check plus registration of the new set (or spawn), one at a time. */
  private lock: Promise<unknown> = Promise.resolve();
  private readonly maxBooting: number;

  constructor(
    private readonly runtime: QemuRuntime,
    /** Machines booting at once for learners; default MAX_BOOTING_PER_CORE per core, at least one 3-VM set. */
    maxBooting?: number,
  ) {
    this.maxBooting = maxBooting ?? Math.max(3, MAX_BOOTING_PER_CORE * os.cpus().length);
  }

  /** A capacity check and the spawn it allows, one at a time over the provider. */
  withCapacity<T>(fn: () => Promise<T>): Promise<T> {
    const step = this.lock.catch(() => undefined).then(fn);
    this.lock = step;
    return step;
  }

  /**
   * Inside withCapacity: refuses (NoCapacityError) `vms` more VMs of `memoryMiB` when memory is
   * short or, for a boot, when too many machines boot already; else counts the boot until `booted`.
   */
  async admit(setId: string, vms: number, memoryMiB: number, boot?: Boot): Promise<void> {
    const check = await checkCapacity(vms, memoryMiB, await this.committedMiB());
    if (!check.fits) throw this.noCapacity(setId, check);
    const busy = boot ? this.bootRefusal(vms, boot.background) : null;
    if (busy) {
      this.runtime.log.info({ sessionId: setId, busy }, "qemu provider: no room to boot now");
      throw new NoCapacityError({ key: "noCapacityBooting" }, `too many machines are booting now (${busy})`);
    }
    if (boot) this.booting.set(setId, { vms, background: boot.background });
  }

  /** The set's boot is over (ready or failed): it no longer counts against the CPU admission. */
  booted(setId: string): void {
    this.booting.delete(setId);
  }

  /** Memory the tracked VMs will still grow into, MiB. */
  async committedMiB(): Promise<number> {
    let total = 0;
    for (const set of this.runtime.sets.values()) {
      for (const record of set.state.vms) {
        const footprint = vmFootprintMiB(set.state.memoryMiB);
        const rss = record.pid > 0 ? ((await residentKiB(record.pid)) ?? 0) / 1024 : 0;
        const alive = record.pid === 0 || set.vms.get(record.name)?.hasExited() === false;
        if (alive) total += Math.max(0, footprint - rss);
      }
    }
    return Math.ceil(total);
  }

  noCapacity(setId: string, check: CapacityCheck): NoCapacityError {
    this.runtime.log.warn({ sessionId: setId, ...check }, "qemu provider: no capacity");
    const free = Math.max(0, check.available - check.reserve - check.committed);
    return new NoCapacityError(
      { key: "noCapacityMemory", params: { needed: check.needed, free } },
      `not enough memory to start the machines: ${check.needed} MiB needed, ${free} MiB free`,
    );
  }

  /** Why another boot of `vms` machines may not start now (CPU admission), or null. */
  private bootRefusal(vms: number, background: boolean): string | null {
    let all = 0;
    let foreground = 0;
    for (const b of this.booting.values()) {
      all += b.vms;
      if (!b.background) foreground += b.vms;
    }
    if (background && all > 0) return `${all} machines are booting; a spare waits`;
    if (!background && foreground > 0 && foreground + vms > this.maxBooting)
      return `${foreground} machines are booting (at most ${this.maxBooting} at once on this host)`;
    return null;
  }
}
