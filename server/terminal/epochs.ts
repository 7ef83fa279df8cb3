/**
 * A terminal's epochs, shared by every server process (TerminalEpoch rows). A holder's log starts
 * at 0 again after a reboot or a holder restart, while the byte offsets a browser holds keep
 * rising; the connector (holder-connector.ts) maps them with a start offset per epoch
 * ("<bootId>/<instance>"): offset = the epoch's startOffset + the log offset. Held in one process
 * only, the start offset was lost at the next deploy: every viewer of a terminal
 * whose machine had rebooted got a snapshot instead of resuming, and a process that started
 * after the reboot could not show the reboot line.
 */
import type { Db } from "../db/client";

/** Epochs kept per terminal: the latest by start offset (older viewers' offsets fall before them and get a snapshot). */
export const EPOCHS_KEPT = 16;

/** One epoch as recorded (columns `base` and `end` of TerminalEpoch). */
export interface EpochRecord {
  /** The viewers' offset of the epoch's log offset 0. */
  startOffset: number;
  /** The log offset after the last byte a process read before it left the epoch; null: not known. */
  endLogOffset: number | null;
}

export interface EpochStore {
  /** The terminal's epochs known so far. */
  load(): Promise<Map<string, EpochRecord>>;
  /** Records `epoch` at `startOffset` unless a process did first; resolves with the start offset that holds. */
  claim(epoch: string, startOffset: number): Promise<number>;
  /** What this process read of `epoch`'s log (up to `endLogOffset`), as it leaves it. */
  setEnd(epoch: string, endLogOffset: number): Promise<void>;
  /** Resolves once the writes begun so far are done (a shutdown waits for them before the database goes). */
  settled(): Promise<void>;
}

/** Epoch writes under way in this process, per terminal (session id and name), whichever store began them. */
const writesInProcess = new Map<string, Set<Promise<unknown>>>();

/**
 * The epochs of terminal `terminal` of lab session `sessionId`, in PostgreSQL. `terminal` names
 * the machine and tab (`node01`, `node01#2`); the holder terminal id alone is the same on every
 * machine of the session, and one machine's epochs then read as another's earlier ones (a start
 * offset 2^40 further, and on VMs a reboot line on a fresh lab).
 */
export function dbEpochStore(db: Db, sessionId: string, terminal: string): EpochStore {
  const writes = new Set<Promise<unknown>>();
  const key = `${sessionId}\u0000${terminal}`;
  // A Prisma query runs when first awaited: made a promise once, then watched and returned.
  const track = <T>(query: PromiseLike<T>): Promise<T> => {
    const write = Promise.resolve(query);
    const terminalWrites = writesInProcess.get(key) ?? writesInProcess.set(key, new Set()).get(key)!;
    const settled = write
      .catch(() => undefined)
      .finally(() => {
        writes.delete(settled);
        terminalWrites.delete(settled);
        if (terminalWrites.size === 0 && writesInProcess.get(key) === terminalWrites) writesInProcess.delete(key);
      });
    writes.add(settled);
    terminalWrites.add(settled);
    return write;
  };
  return {
    async load() {
      // This process's writes for the terminal come first, from any store: a terminal made again
      // while its previous connector's end was still being written read that epoch as one whose
      // end is not known (and, when its holder had restarted meanwhile, jumped UNKNOWN_END_JUMP).
      await Promise.all([...(writesInProcess.get(key) ?? [])]);
      const rows = await db.terminalEpoch.findMany({ where: { sessionId, terminal } });
      return new Map(rows.map((r) => [r.epoch, { startOffset: Number(r.base), endLogOffset: r.end === null ? null : Number(r.end) }]));
    },
    async claim(epoch, startOffset) {
      // The first process to see an epoch sets its start offset; every later one reads it. Single
      // statements (autocommit): Prisma's createMany/updateMany run in a transaction of their
      // own, and a shutdown's dozens at once exhausted the pool and hung every query.
      await track(db.$executeRaw`
        INSERT INTO "TerminalEpoch" ("sessionId", "terminal", "epoch", "base") VALUES (${sessionId}, ${terminal}, ${epoch}, ${BigInt(startOffset)})
        ON CONFLICT DO NOTHING`);
      const [row] = await db.$queryRaw<{ base: bigint }[]>`
        SELECT "base" FROM "TerminalEpoch" WHERE "sessionId" = ${sessionId} AND "terminal" = ${terminal} AND "epoch" = ${epoch}`;
      if (!row) throw new Error(`terminal epoch ${epoch} not recorded`);
      // Only the latest epochs matter (newEpochStartOffset); a learner restarting their holder in a loop
      // must not grow the table without bound.
      await track(db.$executeRaw`
        DELETE FROM "TerminalEpoch" WHERE "sessionId" = ${sessionId} AND "terminal" = ${terminal} AND "epoch" IN (
          SELECT "epoch" FROM "TerminalEpoch" WHERE "sessionId" = ${sessionId} AND "terminal" = ${terminal} ORDER BY "base" DESC OFFSET ${EPOCHS_KEPT})`);
      return Number(row.base);
    },
    async setEnd(epoch, endLogOffset) {
      // Ends only grow: a process that read less must not pull it back.
      await track(db.$executeRaw`
        UPDATE "TerminalEpoch" SET "end" = ${BigInt(endLogOffset)}
        WHERE "sessionId" = ${sessionId} AND "terminal" = ${terminal} AND "epoch" = ${epoch} AND ("end" IS NULL OR "end" < ${BigInt(endLogOffset)})`);
    },
    async settled() {
      await Promise.all([...writes]);
    },
  };
}

/**
 * How far a new epoch's start offset jumps past the last recorded end when the latest earlier epoch's end
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
export function newEpochStartOffset(
  known: Map<string, EpochRecord>,
  previous: { startOffset: number; endLogOffset: number } | null,
  viewerOffset: number | undefined,
): number {
  if (previous) return previous.startOffset + previous.endLogOffset;
  const latest = [...known.values()].sort((a, b) => b.startOffset - a.startOffset)[0];
  if (!latest) return 0;
  const offset = Math.max(latest.startOffset + (latest.endLogOffset ?? 0), viewerOffset ?? 0);
  return latest.endLogOffset === null ? offset + UNKNOWN_END_JUMP : offset;
}
