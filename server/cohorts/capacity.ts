/**
 * The capacity view: live sessions by state, machines held, the machine provider and its warm
 * pool, and this host's memory (from /proc/meminfo). One read; the admin page shows it.
 */
import fs from "node:fs/promises";
import type { Db } from "../db/client";
import type { MachineProvider } from "../machines/provider";
import type { PoolStatus } from "../machines/warm-pool";

export interface Capacity {
  provider: string;
  sessions: Record<"starting" | "ready" | "suspended" | "ending", number>;
  machines: number;
  pool: PoolStatus | null;
  /** Bytes; null where /proc/meminfo cannot be read. */
  memory: { totalBytes: number; availableBytes: number } | null;
  at: Date;
}

export async function capacitySnapshot(db: Db, provider: MachineProvider, meminfoPath = "/proc/meminfo"): Promise<Capacity> {
  const [byState, machines, memory] = await Promise.all([
    db.labSession.groupBy({ by: ["state"], where: { state: { not: "ended" } }, _count: { _all: true } }),
    db.machine.count({ where: { session: { state: { not: "ended" } } } }),
    readMeminfo(meminfoPath),
  ]);
  // Sessions releasing their machines still hold them: counted with the starting ones' neighbours.
  const sessions = { starting: 0, ready: 0, suspended: 0, ending: 0 };
  for (const row of byState) if (row.state !== "ended") sessions[row.state] = row._count._all;
  const pool = typeof (provider as { status?: unknown }).status === "function" ? (provider as unknown as { status(): PoolStatus }).status() : null;
  return { provider: provider.name, sessions, machines, pool, memory, at: new Date() };
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
