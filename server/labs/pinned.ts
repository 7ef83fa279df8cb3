/**
 * The lab version a session is pinned to (versions.ts): the content it runs and is graded
 * against, and the start-up backfill that pins sessions from before versions to the current lab
 * (current step = the first one not passed).
 */
import type { Db } from "../db/client";
import { currentLabVersion, firstOpenStep, storedLabVersion, type CurrentLabs, type LabVersion } from "./versions";

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
