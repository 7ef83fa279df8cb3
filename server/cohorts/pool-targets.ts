/**
 * Admins' settings for a lab's prepared warm sets and cap (PoolTarget rows): how many
 * sets the pool keeps ready with the lab's setup done, how many it makes up front, and how many
 * sessions of the lab may be live at once (more wait in the queue). The warm pool's holder reads
 * the rows every few seconds (server/machines/warm-pool.ts), so a change applies on every process.
 */
import { z } from "zod";
import type { Db } from "../db/client";
import type { LabCatalog } from "../labs/catalog";
import { recordAudit } from "../audit";

export const PoolTargetInput = z.strictObject({
  /** Sets kept ready at all times. */
  reserve: z.number().int().min(0).max(50).describe("sets kept ready"),
  /** Sets made now (a class about to start); hand-outs beyond `reserve` are not replaced. */
  initial: z.number().int().min(0).max(200).describe("sets made up front"),
  /** Most live sessions of the lab at once; null: no cap. */
  cap: z.number().int().min(1).max(10_000).nullable().describe("live sessions at most"),
});
export type PoolTargetInput = z.infer<typeof PoolTargetInput>;

/** Thrown for a lab that does not exist (404). */
export class NoSuchLabError extends Error {
  readonly code = "noSuchLab";
}

export async function setPoolTarget(db: Db, labs: LabCatalog, slug: string, input: unknown, actorId: string) {
  const data = PoolTargetInput.parse(input);
  await labs.get(slug).catch(() => {
    throw new NoSuchLabError(slug);
  });
  return db.$transaction(async (tx) => {
    const row = await tx.poolTarget.upsert({ where: { labSlug: slug }, create: { labSlug: slug, ...data }, update: data });
    await recordAudit(tx, { actorId, action: "pool.target", targetType: "lab", targetId: slug, detail: data });
    return row;
  });
}

export async function removePoolTarget(db: Db, slug: string, actorId: string): Promise<boolean> {
  return db.$transaction(async (tx) => {
    const { count } = await tx.poolTarget.deleteMany({ where: { labSlug: slug } });
    if (count > 0) await recordAudit(tx, { actorId, action: "pool.target", targetType: "lab", targetId: slug, detail: { removed: true } });
    return count > 0;
  });
}
