/**
 * The admin's explicit move of a live session to the lab's current version (keeping the ids of
 * passed steps that still exist; the current step becomes the first one not passed), and which
 * sessions run an outdated version. The pinned version itself: server/labs/pinned.ts.
 */
import type { Db } from "../db/client";
import { recordAudit } from "../audit";
import { currentLabVersion, firstOpenStep, type CurrentLabs, type LabVersion } from "../labs/versions";
import { sessionLab } from "../labs/pinned";
import { LIVE_STATES } from "./lifecycle";

/** Why a move was refused; `status` is the HTTP answer. */
export class VersionMoveError extends Error {
  override readonly name = "VersionMoveError";
  constructor(
    readonly code: "noSuchSession" | "sessionNotLive" | "labUnavailable" | "versionChanged",
    readonly status: 404 | 409,
    message: string,
  ) {
    super(message);
  }
}

export interface VersionMove {
  sessionId: string;
  labSlug: string;
  from: string | null;
  to: string;
  /** False when the session already ran the current version (nothing changed). */
  moved: boolean;
  /** Passed step ids kept (still in the new version). */
  kept: string[];
  /** Passed step ids dropped (not in the new version any more). */
  dropped: string[];
  currentStepId: string | null;
}

/**
 * Moves a live session to the lab's current version: passed steps that still exist stay passed,
 * the others' completions are dropped, and the current step becomes the new version's first step
 * not passed (none: the session is complete). One transaction, conditional on the version the
 * session had, so a check passing meanwhile on the old version (the grader's advance is
 * conditional on the version too) does not interleave. Audited as `session.labVersion`.
 */
export async function moveSessionToCurrentVersion(
  db: Db,
  labs: CurrentLabs,
  sessionId: string,
  actorId: string | null,
): Promise<VersionMove> {
  const session = await db.labSession.findUnique({
    where: { id: sessionId },
    select: { id: true, labSlug: true, labVersion: true, state: true, currentStepId: true },
  });
  if (!session) throw new VersionMoveError("noSuchSession", 404, `no lab session ${sessionId}`);
  if (!(LIVE_STATES as readonly string[]).includes(session.state))
    throw new VersionMoveError("sessionNotLive", 409, `lab session ${sessionId} is ${session.state}`);
  let current: LabVersion;
  try {
    current = await currentLabVersion(db, labs, session.labSlug);
  } catch (error) {
    throw new VersionMoveError(
      "labUnavailable",
      409,
      `lab ${session.labSlug} cannot be loaded: ${(error as Error).message.split("\n")[0]}`,
    );
  }
  return db.$transaction(async (tx) => {
    const completions = await tx.stepCompletion.findMany({
      where: { sessionId },
      select: { stepId: true },
      orderBy: { completedAt: "asc" },
    });
    const ids = new Set(current.lab.steps.map((s) => s.id));
    const kept = completions.map((c) => c.stepId).filter((id) => ids.has(id));
    const dropped = completions.map((c) => c.stepId).filter((id) => !ids.has(id));
    const open = firstOpenStep(current.lab, new Set(kept));
    const base = { sessionId, labSlug: session.labSlug, from: session.labVersion, to: current.hash, kept, dropped, currentStepId: open };
    if (session.labVersion === current.hash) return { ...base, moved: false, dropped: [], currentStepId: session.currentStepId };
    const now = new Date();
    const updated = await tx.labSession.updateMany({
      where: { id: sessionId, labVersion: session.labVersion, state: { in: [...LIVE_STATES] } },
      data: {
        labVersion: current.hash,
        currentStepId: open,
        ...(open !== session.currentStepId ? { currentStepSince: now } : {}),
        completedAt: open === null ? now : null,
      },
    });
    if (updated.count !== 1) throw new VersionMoveError("versionChanged", 409, `lab session ${sessionId} changed meanwhile; try again`);
    if (dropped.length > 0) await tx.stepCompletion.deleteMany({ where: { sessionId, stepId: { in: dropped } } });
    await recordAudit(tx, {
      actorId,
      action: "session.labVersion",
      targetType: "session",
      targetId: sessionId,
      detail: { labSlug: session.labSlug, from: session.labVersion, to: current.hash, kept, dropped, currentStepId: open },
    });
    return { ...base, moved: true };
  });
}

/** Live sessions of a lab that run another version than the current one (for the CLI's `--lab`). */
export async function outdatedSessions(db: Db, labs: CurrentLabs, slug: string): Promise<string[]> {
  const { hash } = await currentLabVersion(db, labs, slug);
  const rows = await db.labSession.findMany({
    where: { labSlug: slug, state: { in: [...LIVE_STATES] }, OR: [{ labVersion: null }, { labVersion: { not: hash } }] },
    select: { id: true },
    orderBy: { createdAt: "asc" },
  });
  return rows.map((r) => r.id);
}

/** `sessionLab` by session id (routes and pages that hold only the id). */
export async function sessionLabById(db: Db, labs: CurrentLabs, sessionId: string): Promise<LabVersion> {
  const session = await db.labSession.findUniqueOrThrow({
    where: { id: sessionId },
    select: { id: true, labSlug: true, labVersion: true },
  });
  return sessionLab(db, labs, session);
}
