/**
 * The instructor dashboard's data for one cohort and lab: a row per learner (steps done, the
 * current step and since when, the newest failing check's output), sorted stuck-longest first;
 * the funnel (learners past each step) and time on each step (heatmap). Also a learner's
 * timeline of check runs. Computed from rows (LabSession, StepCompletion, CheckRun) on each call:
 * the dashboard re-fetches when the event bus says one of the cohort's sessions changed.
 */
import { z } from "zod";
import type { Db } from "../db/client";
import type { Lab } from "../labs/load";
import { getCohortOrThrow } from "./cohorts";

export const DashboardLearner = z.object({
  userId: z.string(),
  name: z.string(),
  email: z.string(),
  /** Null when the learner has no session of this lab (not started). */
  sessionId: z.string().nullable(),
  state: z.enum(["none", "starting", "ready", "suspended", "ended"]),
  stepsDone: z.number().int(),
  currentStepId: z.string().nullable(),
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

export async function cohortDashboard(db: Db, labs: LabSource, cohortId: string, labSlug?: string, now = new Date()): Promise<Dashboard> {
  const cohort = await getCohortOrThrow(db, cohortId);
  const slug = labSlug && cohort.labs.includes(labSlug) ? labSlug : (cohort.labs[0] ?? null);
  const lab = slug ? await labs.get(slug).catch(() => null) : null;
  const steps = lab?.steps.map((s) => ({ id: s.id, title: s.title })) ?? [];
  const members = await db.cohortMember.findMany({
    where: { cohortId, role: "learner" },
    select: { user: { select: { id: true, name: true, email: true } } },
  });
  const ids = members.map((m) => m.user.id);
  // Each learner's newest session of the lab (live first).
  const sessions = slug
    ? await db.labSession.findMany({
        where: { learnerId: { in: ids }, labSlug: slug },
        orderBy: { createdAt: "desc" },
        include: { completions: { select: { stepIndex: true, completedAt: true } } },
      })
    : [];
  const newest = new Map<string, (typeof sessions)[number]>();
  for (const s of sessions) {
    const had = newest.get(s.learnerId);
    const over = (x: typeof s) => x.state === "ended" || x.state === "ending";
    if (!had || (over(had) && !over(s))) newest.set(s.learnerId, s);
  }
  const failures = await latestFailures(db, [...newest.values()].map((s) => ({ id: s.id, stepId: steps[s.currentStep]?.id ?? null })));

  const learners: DashboardLearner[] = members.map(({ user }) => {
    const s = newest.get(user.id);
    if (!s) {
      return {
        userId: user.id,
        name: user.name,
        email: user.email,
        sessionId: null,
        state: "none",
        stepsDone: 0,
        currentStepId: null,
        currentSince: null,
        completed: false,
        lastFailure: null,
        stepSeconds: steps.map(() => null),
        expiresAt: null,
      };
    }
    const done = Math.min(s.currentStep, steps.length);
    const completedAt = new Map(s.completions.map((c) => [c.stepIndex, c.completedAt]));
    // A step starts when the one before it was passed (the first: when the session became ready).
    const stepSeconds = steps.map((_, i) => {
      if (i > s.currentStep) return null;
      const start = i === 0 ? s.createdAt : (completedAt.get(i - 1) ?? null);
      const end = i < s.currentStep ? (completedAt.get(i) ?? null) : s.state === "ended" ? (s.endedAt ?? now) : now;
      if (i === s.currentStep && s.completedAt) return null;
      return start && end ? Math.max(0, Math.round((end.getTime() - start.getTime()) / 1000)) : null;
    });
    return {
      userId: user.id,
      name: user.name,
      email: user.email,
      sessionId: s.id,
      // Machines still being released: over, as far as anyone watching is concerned.
      state: s.state === "ending" ? "ended" : s.state,
      stepsDone: done,
      currentStepId: s.completedAt ? null : (steps[s.currentStep]?.id ?? null),
      currentSince: s.completedAt ? null : s.currentStepSince.toISOString(),
      completed: s.completedAt !== null,
      lastFailure: failures.get(s.id) ?? null,
      stepSeconds,
      expiresAt: s.expiresAt?.toISOString() ?? null,
    };
  });
  learners.sort(byStuckLongest(now));
  const funnel = steps.map((_, i) => learners.filter((l) => l.stepsDone > i).length);
  return { cohortId, labSlug: slug, steps, learners, funnel, at: now.toISOString() };
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

async function latestFailures(db: Db, sessions: { id: string; stepId: string | null }[]) {
  const result = new Map<string, { outcome: string; output: string; at: string }>();
  await Promise.all(
    sessions
      .filter((s) => s.stepId)
      .map(async (s) => {
        const run = await db.checkRun.findFirst({
          where: { sessionId: s.id, stepId: s.stepId!, outcome: { not: "pass" } },
          orderBy: { createdAt: "desc" },
          select: { outcome: true, output: true, createdAt: true },
        });
        if (run) result.set(s.id, { outcome: run.outcome, output: run.output, at: run.createdAt.toISOString() });
      }),
  );
  return result;
}

export interface TimelineEntry {
  at: string;
  stepId: string;
  outcome: string;
  trigger: string;
  output: string;
  durationMs: number;
}

/** A session's check runs, oldest first (at most `take`, the newest ones). */
export async function sessionTimeline(db: Db, sessionId: string, take = 300): Promise<TimelineEntry[]> {
  const runs = await db.checkRun.findMany({ where: { sessionId }, orderBy: { createdAt: "desc" }, take });
  return runs.reverse().map((r) => ({ at: r.createdAt.toISOString(), stepId: r.stepId, outcome: r.outcome, trigger: r.trigger, output: r.output, durationMs: r.durationMs }));
}

/** The learner ids of a cohort (for filtering bus events). */
export async function cohortLearnerSessionIds(db: Db, cohortId: string): Promise<Set<string>> {
  const cohort = await getCohortOrThrow(db, cohortId);
  const rows = await db.labSession.findMany({
    where: { labSlug: { in: cohort.labs }, learnerId: { in: (await db.cohortMember.findMany({ where: { cohortId, role: "learner" }, select: { userId: true } })).map((m) => m.userId) } },
    select: { id: true },
  });
  return new Set(rows.map((r) => r.id));
}
