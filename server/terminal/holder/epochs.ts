/**
 * A terminal's epochs, shared by every server process (TerminalEpoch rows). A holder's log starts
 * at 0 again after a reboot or a holder restart, while the byte offsets a browser holds keep
 * rising; the connector (connector.ts) maps them with a base per epoch ("<bootId>/<instance>").
 * Held in one process only, the base was lost at the next deploy: every viewer of a terminal
 * whose machine had rebooted got a snapshot instead of resuming, and a process that started
 * after the reboot could not show the reboot line.
 */
import type { Db } from "../../db/client";

export interface EpochRecord {
  base: number;
  /** The log's end as last read by a process that left the epoch; null: not known. */
  end: number | null;
}

export interface EpochStore {
  /** The terminal's epochs known so far. */
  load(): Promise<Map<string, EpochRecord>>;
  /** Records `epoch` at `base` unless a process did first; resolves with the base that holds. */
  claim(epoch: string, base: number): Promise<number>;
  /** What this process read of `epoch`'s log, as it leaves it. */
  setEnd(epoch: string, end: number): Promise<void>;
  /** Resolves once the writes begun so far are done (a shutdown waits for them before the database goes). */
  settled(): Promise<void>;
}

/** The epochs of holder terminal `terminal` of lab session `sessionId`, in PostgreSQL. */
export function dbEpochStore(db: Db, sessionId: string, terminal: string): EpochStore {
  const writes = new Set<Promise<unknown>>();
  const track = <T>(write: Promise<T>): Promise<T> => {
    const settled = write.catch(() => undefined).finally(() => writes.delete(settled));
    writes.add(settled);
    return write;
  };
  return {
    async load() {
      const rows = await db.terminalEpoch.findMany({ where: { sessionId, terminal } });
      return new Map(rows.map((r) => [r.epoch, { base: Number(r.base), end: r.end === null ? null : Number(r.end) }]));
    },
    async claim(epoch, base) {
      // The first process to see an epoch sets its base; every later one reads it.
      await track(db.terminalEpoch.createMany({ data: [{ sessionId, terminal, epoch, base: BigInt(base) }], skipDuplicates: true }));
      const row = await db.terminalEpoch.findUniqueOrThrow({ where: { sessionId_terminal_epoch: { sessionId, terminal, epoch } } });
      return Number(row.base);
    },
    async setEnd(epoch, end) {
      // Ends only grow: a process that read less must not pull it back.
      await track(db.terminalEpoch.updateMany({ where: { sessionId, terminal, epoch, OR: [{ end: null }, { end: { lt: BigInt(end) } }] }, data: { end: BigInt(end) } }));
    },
    async settled() {
      await Promise.all([...writes]);
    },
  };
}

/**
 * How far a new epoch's base jumps past the last recorded end when the latest earlier epoch's end
 * is not known (the process reading it was killed): beyond any offset a viewer can hold from it,
 * so every such viewer gets a snapshot rather than the new shell's bytes at the wrong place.
 */
export const UNKNOWN_END_JUMP = 2 ** 40;

/**
 * Where a new epoch starts for viewers, chosen by the first process that sees it:
 * - right after the previous epoch's end, when this process read the previous log to its end;
 * - 0 for a terminal's first epoch (no earlier one recorded);
 * - otherwise (the epoch began while no process was attached: the machine rebooted during a
 *   deploy, or with no viewer) after the latest earlier epoch's recorded end, or at the resuming
 *   viewer's offset when that is further, so that viewer goes on seamlessly; UNKNOWN_END_JUMP
 *   further when that end was never recorded.
 */
export function newEpochBase(known: Map<string, EpochRecord>, previous: { base: number; end: number } | null, viewerOffset: number | undefined): number {
  if (previous) return previous.base + previous.end;
  const latest = [...known.values()].sort((a, b) => b.base - a.base)[0];
  if (!latest) return 0;
  const from = Math.max(latest.base + (latest.end ?? 0), viewerOffset ?? 0);
  return latest.end === null ? from + UNKNOWN_END_JUMP : from;
}
