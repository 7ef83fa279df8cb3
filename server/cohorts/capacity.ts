/**
 * The capacity view: live sessions by state, machines held, the machine provider and its warm
 * pool, and this host's memory (from /proc/meminfo). One read; the admin page shows it.
 */
import fs from "node:fs/promises";
import type { Db } from "../db/client";
import type { MachineProvider } from "../machines/provider";
import type { PoolStatus } from "../machines/warm-pool";
import { HOST_RESERVE_MIB, vmFootprintMiB } from "../machines/qemu/capacity";
import { machineSize } from "../machines/sizes";
import { listLabs } from "../labs/load";
import { LIVE_NOT_QUEUED } from "../sessions/start-progress";

/** A lab as the capacity page shows it: machine size, how many sessions fit, its prepared sets and queue. */
export interface LabCapacity {
  slug: string;
  title: string;
  image: string;
  machines: number;
  /** Per VM, from the image variant (recipe.ts `machine`). */
  vcpus: number;
  memoryMiB: number;
  /** Expected resident memory of one session, MiB. */
  sessionMiB: number;
  /** Sessions of this lab that fit in the host's available memory now (after the host's reserve); null: unknown. */
  fit: number | null;
  /** Its PoolTarget (prepared sets and cap), if an admin set one. */
  target: { reserve: number; initial: number; cap: number | null } | null;
  /** Prepared sets ready in this process's pool (the pool's holder process has them). */
  ready: number | null;
  live: number;
  queued: number;
}

export interface Capacity {
  provider: string;
  sessions: Record<"starting" | "ready" | "suspended" | "ending", number>;
  machines: number;
  pool: PoolStatus | null;
  /** Bytes; null where /proc/meminfo cannot be read. */
  memory: { totalBytes: number; availableBytes: number } | null;
  /** Per lab (with a labs directory): size, fit, prepared sets, queue. */
  labs: LabCapacity[];
  at: Date;
}

export async function capacitySnapshot(
  db: Db,
  provider: MachineProvider,
  options: { labsDir?: string; meminfoPath?: string } = {},
): Promise<Capacity> {
  const meminfoPath = options.meminfoPath ?? "/proc/meminfo";
  const [byState, machines, memory] = await Promise.all([
    db.labSession.groupBy({ by: ["state"], where: { state: { not: "ended" } }, _count: { _all: true } }),
    db.machine.count({ where: { session: { state: { not: "ended" } } } }),
    readMeminfo(meminfoPath),
  ]);
  // Sessions releasing their machines still hold them: counted with the starting ones' neighbours.
  const sessions = { starting: 0, ready: 0, suspended: 0, ending: 0 };
  for (const row of byState) if (row.state !== "ended") sessions[row.state] = row._count._all;
  const pool =
    typeof (provider as { status?: unknown }).status === "function" ? (provider as unknown as { status(): PoolStatus }).status() : null;
  const labs = options.labsDir ? await labCapacities(db, options.labsDir, pool, memory) : [];
  return { provider: provider.name, sessions, machines, pool, memory, labs, at: new Date() };
}

async function labCapacities(db: Db, labsDir: string, pool: PoolStatus | null, memory: Capacity["memory"]): Promise<LabCapacity[]> {
  const [{ labs }, targets, live, queued] = await Promise.all([
    listLabs(labsDir),
    db.poolTarget.findMany(),
    db.labSession.groupBy({ by: ["labSlug"], where: LIVE_NOT_QUEUED, _count: { _all: true } }),
    db.labSession.groupBy({ by: ["labSlug"], where: { state: "starting", startStage: "queued" }, _count: { _all: true } }),
  ]);
  const freeMiB = memory ? memory.availableBytes / 1024 / 1024 - HOST_RESERVE_MIB : null;
  return labs.map((lab) => {
    const size = machineSize(lab.manifest.image);
    const sessionMiB = lab.manifest.machines.length * vmFootprintMiB(size.memoryMiB);
    const target = targets.find((t) => t.labSlug === lab.slug);
    return {
      slug: lab.slug,
      title: lab.manifest.title,
      image: lab.manifest.image,
      machines: lab.manifest.machines.length,
      vcpus: size.vcpus,
      memoryMiB: size.memoryMiB,
      sessionMiB,
      fit: freeMiB === null ? null : Math.max(0, Math.floor(freeMiB / sessionMiB)),
      target: target ? { reserve: target.reserve, initial: target.initial, cap: target.cap } : null,
      ready: pool?.labs?.find((l) => l.labSlug === lab.slug)?.ready ?? null,
      live: live.find((g) => g.labSlug === lab.slug)?._count._all ?? 0,
      queued: queued.find((g) => g.labSlug === lab.slug)?._count._all ?? 0,
    };
  });
}

/** MemTotal and MemAvailable from a meminfo file (kB values), or null. */
export async function readMeminfo(file: string): Promise<{ totalBytes: number; availableBytes: number } | null> {
  const text = await fs.readFile(file, "utf8").catch(() => null);
  if (!text) return null;
  const kb = (key: string) => {
    const m = new RegExp(`^${key}:\\s+(\\d+) kB$`, "m").exec(text);
    return m ? Number(m[1]) * 1024 : null;
  };
  const total = kb("MemTotal");
  const available = kb("MemAvailable");
  return total !== null && available !== null ? { totalBytes: total, availableBytes: available } : null;
}
