/**
 * The audit log: who did what to what, and when. Append-only rows written next to the action
 * (watching a learner's terminals, ending a cohort, extending time, importing learners).
 */
import { z } from "zod";
import type { Db } from "./db/client";
import type { Prisma } from "./db/generated/client";

export const AuditAction = z.enum([
  "cohort.create",
  "cohort.update",
  "cohort.end",
  "cohort.import",
  "cohort.member.add",
  "cohort.member.remove",
  "cohort.provision",
  "invitation.revoke",
  "pool.target",
  "session.extend",
  "session.labVersion",
  "session.watch",
]);
export type AuditAction = z.infer<typeof AuditAction>;

export const AuditEntry = z.object({
  actorId: z.string().min(1).nullable(),
  action: AuditAction,
  targetType: z.enum(["cohort", "session", "user", "invitation", "lab"]),
  targetId: z.string().min(1),
  detail: z.record(z.string(), z.unknown()).optional(),
});
export type AuditEntry = z.input<typeof AuditEntry>;

/** A client or a transaction: audit rows are written in the same transaction as the action when there is one. */
type DbLike = Pick<Db, "auditLog">;

export async function recordAudit(db: DbLike, entry: AuditEntry, at = new Date()): Promise<void> {
  const e = AuditEntry.parse(entry);
  await db.auditLog.create({
    data: {
      actorId: e.actorId,
      action: e.action,
      targetType: e.targetType,
      targetId: e.targetId,
      detail: (e.detail ?? undefined) as Prisma.InputJsonValue | undefined,
      createdAt: at,
    },
  });
}

export interface AuditView {
  id: string;
  actorId: string | null;
  actorName: string | null;
  action: string;
  targetType: string;
  targetId: string;
  detail: unknown;
  createdAt: Date;
}

/** Newest first; optionally only entries about some targets. */
export async function listAudit(db: Db, filter: { targetIds?: string[]; take?: number } = {}): Promise<AuditView[]> {
  const rows = await db.auditLog.findMany({
    where: filter.targetIds ? { targetId: { in: filter.targetIds } } : {},
    orderBy: { createdAt: "desc" },
    take: filter.take ?? 200,
  });
  const actorIds = [...new Set(rows.map((r) => r.actorId).filter((id): id is string => id !== null))];
  const names = new Map(
    (await db.user.findMany({ where: { id: { in: actorIds } }, select: { id: true, name: true } })).map((u) => [u.id, u.name]),
  );
  return rows.map((r) => ({ ...r, actorName: r.actorId ? (names.get(r.actorId) ?? null) : null }));
}
