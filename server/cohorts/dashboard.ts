/**
 * The instructor dashboard's data for one cohort and lab: a row per learner (steps done, the
 * current step and since when, the newest failing check's output), sorted stuck-longest first;
 * the funnel (learners past each step) and time on each step (heatmap). Also a learner's
 * timeline of check history. The grid is one indexed query (gridRows) over LabSession,
 * StepCompletion and CheckRun; the dashboard re-fetches when the event bus says one of the
 * cohort's sessions changed, which the grader says only when a history row was added (a repeated
 * identical result only counts, history.ts, and changes nothing shown here).
 */
import { z } from "zod";
import type { Db } from "../db/client";
import { Prisma } from "../db/generated/client";
import type { Lab } from "../labs/load";
import { labVersionHash } from "../labs/versions";
import { getCohortOrThrow } from "./cohorts";

export const DashboardLearner = z.object({
  userId: z.string(),
  name: z.string(),
  email: z.string(),
  /** Null when the learner has no session of this lab (not started). */
  sessionId: z.string().nullable(),
  state: z.enum(["none", "starting", "ready", "suspended", "ended"]),
  stepsDone: z.number().int(),
  /** Ids of the steps the session passed (progress is by step id, so it reads the same in any version). */
  doneStepIds: z.array(z.string()),
  currentStepId: z.string().nullable(),
  /** The current step passed now and waits for a reboot of its machine (reboot proof, server/grader/reboot-proof.ts). */
  awaitingReboot: z.boolean(),
  /** The lab version the session runs (LabVersion.hash); null: none yet. */
  labVersion: z.string().nullable(),
  /** The session runs another version than the lab's current one (an admin may move it). */
  outdated: z.boolean(),
  /** ISO time the current step became current (time on step = now − this). */
  currentSince: z.string().nullable(),
  completed: z.boolean(),
  /** Output of the newest failing (non-pass) check run of the current step, if any. */
  lastFailure: z.object({ outcome: z.string(), output: z.string(), at: z.string() }).nullable(),
  /** Seconds spent on each step (done steps: until passed; the current one: until now); null if not reached. */
  stepSeconds: z.array(z.number().nullable()),
  expiresAt: z.string().nullable(),
});
export type DashboardLearner = z.infer<typeof DashboardLearner>;

export const Dashboard = z.object({
  cohortId: z.string(),
  labSlug: z.string().nullable(),
  /** The lab's current version; `steps` are its steps, a learner's cells are matched by step id. */
  labVersion: z.string().nullable(),
  steps: z.array(z.object({ id: z.string(), title: z.string() })),
  learners: z.array(DashboardLearner),
  /** funnel[i]: learners who passed step i. */
  funnel: z.array(z.number().int()),
  /** ISO time the dashboard was computed. */
  at: z.string(),
});
export type Dashboard = z.infer<typeof Dashboard>;

export interface LabSource {
  get(slug: string): Promise<Lab>;
}

/** Seconds on each step of a session by step id: a passed step from the pass before it (or the start), the current one until now. */
function secondsByStep(s: SessionColumns, now: Date): Map<string, number> {
  const seconds = new Map<string, number>();
  let start = s.createdAt.getTime();
  for (const c of [...(s.completions ?? [])].sort((a, b) => a.at - b.at)) {
    seconds.set(c.s, Math.max(0, Math.round((c.at - start) / 1000)));
    start = c.at;
  }
  if (s.currentStepId && !s.completedAt) {
    const end = s.state === "ended" ? (s.endedAt ?? now) : now;
    seconds.set(s.currentStepId, Math.max(0, Math.round((end.getTime() - s.currentStepSince.getTime()) / 1000)));
  }
  return seconds;
}

export async function cohortDashboard(db: Db, labs: LabSource, cohortId: string, labSlug?: string, now = new Date()): Promise<Dashboard> {
  const cohort = await getCohortOrThrow(db, cohortId);
  const slug = labSlug && cohort.labs.includes(labSlug) ? labSlug : (cohort.labs[0] ?? null);
  const lab = slug ? await labs.get(slug).catch(() => null) : null;
  const labVersion = lab ? labVersionHash(lab) : null;
  const steps = lab?.steps.map((s) => ({ id: s.id, title: s.title })) ?? [];
  const rows = await gridRows(db, cohortId, slug);

  const learners: DashboardLearner[] = rows.map((r) => {
    if (!r.sessionId) {
      return {
        userId: r.userId,
        name: r.name,
        email: r.email,
        sessionId: null,
        state: "none",
        stepsDone: 0,
        doneStepIds: [],
        currentStepId: null,
        awaitingReboot: false,
        labVersion: null,
        outdated: false,
        currentSince: null,
        completed: false,
        lastFailure: null,
        stepSeconds: steps.map(() => null),
        expiresAt: null,
      };
    }
    const s = r as GridRow & SessionColumns;
    const doneStepIds = (s.completions ?? []).map((c) => c.s);
    const seconds = secondsByStep(s, now);
    const stepSeconds = steps.map((step) => seconds.get(step.id) ?? null);
    return {
      userId: s.userId,
      name: s.name,
      email: s.email,
      sessionId: s.sessionId,
      // Machines still being released: over, as far as anyone watching is concerned.
      state: s.state === "ending" ? "ended" : s.state,
      stepsDone: doneStepIds.length,
      doneStepIds,
      currentStepId: s.completedAt ? null : s.currentStepId,
      awaitingReboot:
        !s.completedAt && s.currentStepId !== null && s.proofStepId === s.currentStepId && s.state !== "ended" && s.state !== "ending",
      labVersion: s.labVersion,
      outdated: labVersion !== null && s.labVersion !== labVersion && s.state !== "ended" && s.state !== "ending",
      currentSince: s.completedAt ? null : s.currentStepSince.toISOString(),
      completed: s.completedAt !== null,
      lastFailure: s.failOutcome ? { outcome: s.failOutcome, output: s.failOutput!, at: s.failAt!.toISOString() } : null,
      stepSeconds,
      expiresAt: s.expiresAt?.toISOString() ?? null,
    };
  });
  learners.sort(byStuckLongest(now));
  const funnel = steps.map((step) => learners.filter((l) => l.doneStepIds.includes(step.id)).length);
  return { cohortId, labSlug: slug, labVersion, steps, learners, funnel, at: now.toISOString() };
}

interface GridRow {
  userId: string;
  name: string;
  email: string;
  sessionId: string | null;
}
interface SessionColumns {
  sessionId: string;
  state: "starting" | "ready" | "suspended" | "ending" | "ended";
  currentStepId: string | null;
  /** The step of the session's reboot-proof record ("passed now"), if any. */
  proofStepId: string | null;
  labVersion: string | null;
  currentStepSince: Date;
  createdAt: Date;
  endedAt: Date | null;
  completedAt: Date | null;
  expiresAt: Date | null;
  /** Passed steps: step id and epoch ms. */
  completions: { s: string; at: number }[] | null;
  /** The newest non-pass history row of the current step: since when it has failed this way. */
  failOutcome: string | null;
  failOutput: string | null;
  failAt: Date | null;
}

/**
 * The grid in one query, every join an index lookup: each learner member of the cohort, their
 * newest session of the lab (a live one before an ended one; LabSession(learnerId, labSlug,
 * state)), its passed steps (StepCompletion(sessionId, stepId)) and the newest failing history
 * row of its current step (CheckRun(sessionId, stepId, lastAt)), all by step id.
 * bench/check-history.ts EXPLAINs it.
 */
export function gridRows(db: Db, cohortId: string, slug: string | null): Promise<(GridRow & Partial<SessionColumns>)[]> {
  return db.$queryRaw<(GridRow & Partial<SessionColumns>)[]>(gridQuery(cohortId, slug));
}

/** The grid's SQL (for gridRows, and for EXPLAIN in the bench). */
export function gridQuery(cohortId: string, slug: string | null): Prisma.Sql {
  return Prisma.sql`
    SELECT u."id" AS "userId", u."name", u."email",
           s."id" AS "sessionId", s."state"::text AS "state", s."currentStepId", s."proofStepId", s."labVersion", s."currentStepSince", s."createdAt", s."endedAt", s."completedAt", s."expiresAt",
           comp."completions", f."outcome"::text AS "failOutcome", f."output" AS "failOutput", f."createdAt" AS "failAt"
      FROM "CohortMember" m
      JOIN "User" u ON u."id" = m."userId"
      LEFT JOIN LATERAL (
        SELECT * FROM "LabSession" ls
         WHERE ls."learnerId" = m."userId" AND ls."labSlug" = ${slug}
         ORDER BY (ls."state" IN ('ending', 'ended')), ls."createdAt" DESC LIMIT 1
      ) s ON true
      LEFT JOIN LATERAL (
        SELECT json_agg(json_build_object('s', c."stepId", 'at', EXTRACT(EPOCH FROM c."completedAt") * 1000)) AS "completions"
          FROM "StepCompletion" c WHERE c."sessionId" = s."id"
      ) comp ON true
      LEFT JOIN LATERAL (
        SELECT r."outcome", r."output", r."createdAt" FROM "CheckRun" r
         WHERE r."sessionId" = s."id" AND r."stepId" = s."currentStepId" AND r."outcome" <> 'pass'
         ORDER BY r."lastAt" DESC LIMIT 1
      ) f ON true
     WHERE m."cohortId" = ${cohortId} AND m."role" = 'learner'`;
}

/**
 * Stuck longest first: working learners (a live session on a step) by time on their current step,
 * longest first; then learners who have not started; then those who finished.
 */
export function byStuckLongest(now: Date) {
  const rank = (l: DashboardLearner) => (l.completed ? 2 : l.currentSince && l.state !== "ended" ? 0 : 1);
  return (a: DashboardLearner, b: DashboardLearner) => {
    const r = rank(a) - rank(b);
    if (r !== 0) return r;
    const since = (l: DashboardLearner) => (l.currentSince ? Date.parse(l.currentSince) : now.getTime());
    return since(a) - since(b) || a.name.localeCompare(b.name);
  };
}

export interface TimelineEntry {
  at: string;
  stepId: string;
  outcome: string;
  trigger: string;
  output: string;
  durationMs: number;
  /** Runs with this same result in a row (the first at `at`, the newest at `lastAt`). */
  count: number;
  lastAt: string;
}

/** A session's check history, oldest first (at most `take` rows, the newest ones): one entry per change of result. */
export async function sessionTimeline(db: Db, sessionId: string, take = 300): Promise<TimelineEntry[]> {
  const runs = await db.checkRun.findMany({ where: { sessionId }, orderBy: { lastAt: "desc" }, take });
  return runs.reverse().map((r) => ({
    at: r.createdAt.toISOString(),
    stepId: r.stepId,
    outcome: r.outcome,
    trigger: r.trigger,
    output: r.output,
    durationMs: r.durationMs,
    count: r.count,
    lastAt: r.lastAt.toISOString(),
  }));
}

/** The learner ids of a cohort (for filtering bus events). */
export async function cohortLearnerSessionIds(db: Db, cohortId: string): Promise<Set<string>> {
  const cohort = await getCohortOrThrow(db, cohortId);
  const rows = await db.labSession.findMany({
    where: {
      labSlug: { in: cohort.labs },
      learnerId: {
        in: (await db.cohortMember.findMany({ where: { cohortId, role: "learner" }, select: { userId: true } })).map((m) => m.userId),
      },
    },
    select: { id: true },
  });
  return new Set(rows.map((r) => r.id));
}
