/**
 * A lab session's pinned lab version (server/labs/versions.ts): the content it runs and is graded
 * against, the start-up backfill of sessions from before versions, and the admin's explicit move
 * of a live session to the lab's current version (keeping the ids of passed steps that still
 * exist; the current step becomes the first one not passed).
 */
import type { Db } from "../db/client";
import { recordAudit } from "../audit";
import { currentLabVersion, firstOpenStep, storedLabVersion, type CurrentLabs, type LabVersion } from "../labs/versions";
import { LIVE_STATES } from "./lifecycle";

type SessionRef = { id: string; labSlug: string; labVersion: string | null };

/**
 * The lab content a session runs: its pinned version; a session from before versions is pinned
 * to the current lab first (the backfill, for one session). Throws what the catalog throws when
 * an unpinned session's lab cannot be loaded.
 */
export async function sessionLab(db: Db, labs: CurrentLabs, session: SessionRef): Promise<LabVersion> {
  if (session.labVersion) {
    const lab = await storedLabVersion(db, session.labSlug, session.labVersion);
    if (lab) return { hash: session.labVersion, lab };
  }
  return pinLegacySession(db, labs, session.id, session.labSlug);
}

/**
 * Pins a session that has no version (rows from before versions) to the current lab: its current
 * step becomes the first step not passed (StepCompletion rows, by id; the old index always equalled
 * their count). A conditional write, so concurrent backfills agree; returns what the row holds.
 */
async function pinLegacySession(db: Db, labs: CurrentLabs, sessionId: string, slug: string): Promise<LabVersion> {
  const current = await currentLabVersion(db, labs, slug);
  await db.$transaction(async (tx) => {
    const done = new Set((await tx.stepCompletion.findMany({ where: { sessionId }, select: { stepId: true } })).map((c) => c.stepId));
    const open = firstOpenStep(current.lab, done);
    await tx.labSession.updateMany({
      where: { id: sessionId, labVersion: null },
      // A session already marked complete stays complete (no step re-opens under it).
      data: { labVersion: current.hash, currentStepId: open },
    });
    await tx.labSession.updateMany({
      where: { id: sessionId, completedAt: { not: null }, labVersion: current.hash },
      data: { currentStepId: null },
    });
  });
  const row = await db.labSession.findUniqueOrThrow({ where: { id: sessionId }, select: { labVersion: true } });
  if (row.labVersion && row.labVersion !== current.hash) {
    const lab = await storedLabVersion(db, slug, row.labVersion);
    if (lab) return { hash: row.labVersion, lab };
  }
  return current;
}

/**
 * The start-up backfill: pins every session without a version (from before versions) to the
 * current lab, current step = first step not passed. Sessions whose lab no longer loads are left
 * as they are (reported) and pinned when it loads again.
 */
export async function backfillLabVersions(
  db: Db,
  labs: CurrentLabs,
): Promise<{ pinned: number; failed: { sessionId: string; labSlug: string; error: string }[] }> {
  const rows = await db.labSession.findMany({ where: { labVersion: null }, select: { id: true, labSlug: true } });
  const failed: { sessionId: string; labSlug: string; error: string }[] = [];
  let pinned = 0;
  for (const row of rows) {
    try {
      await pinLegacySession(db, labs, row.id, row.labSlug);
      pinned++;
    } catch (error) {
      failed.push({ sessionId: row.id, labSlug: row.labSlug, error: (error as Error).message.split("\n")[0]! });
    }
  }
  return { pinned, failed };
}

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
