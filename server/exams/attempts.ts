/**
 * Exam attempts: one per exam session (a lab with `mode: exam`). The clock is the server's: the
 * attempt starts when its learner opens it with the machines ready and its deadline is a row, so reloads,
 * lost connections and restarts do not stop it. A hand-in (the learner's, or the deadline's, by
 * whichever process sees it first) moves it to `scoring` and closes the session's input in one
 * statement; scoring.ts takes it from there. While it runs the learner sees tasks and their own
 * marks, never a check result.
 */
import { z } from "zod";
import type { Db } from "../db/client";
import { Denied } from "../denied";
import type { ExamState, ExamSubmitReason } from "../db/generated/client";
import type { Lab } from "../labs/load";

/** Task switches kept per attempt (time per task, recording markers); beyond, switches are not recorded. */
export const MAX_TASK_SWITCHES = 5_000;

/**
 * The exam fields of a lab with `mode: exam` (null for a lab), its time as `cohortMinutes` says
 * when the learner's cohort sets one.
 */
export function examOf(lab: Pick<Lab, "manifest">, cohortMinutes?: number | null): { durationMinutes: number; passPercent: number } | null {
  const exam = lab.manifest.mode === "exam" ? lab.manifest.exam : undefined;
  return exam ? { ...exam, durationMinutes: cohortMinutes ?? exam.durationMinutes } : null;
}

/** Minutes an exam session lives past its duration, for the hand-in, the scoring and its reboots. */
export const SCORING_MARGIN_MINUTES = 60;

/** What a session start adds for an exam (graded at the end, living past its deadline); nothing for a lab. */
export function examStartRequest(lab: Pick<Lab, "manifest">, cohortMinutes?: number | null): { gradedAtEnd?: { atLeastMinutes: number } } {
  const exam = examOf(lab, cohortMinutes);
  return exam ? { gradedAtEnd: { atLeastMinutes: exam.durationMinutes + SCORING_MARGIN_MINUTES } } : {};
}

/**
 * Why a learner may not start a new sitting of an exam now (a message key), or null: outside
 * their cohort's window (startsAt..endsAt), or with its sittings used. A live sitting is joined,
 * never refused; staff and exams open to all without a cohort are not limited.
 */
export async function refuseExamStart(
  db: Db,
  learnerId: string,
  lab: Pick<Lab, "slug" | "manifest">,
  cohort: { cohortId: string; startsAt: Date | null; endsAt: Date | null; examAttempts: number } | null,
  now = new Date(),
): Promise<"examNotOpen" | "examClosed" | "examAttemptsUsed" | null> {
  if (!examOf(lab) || !cohort) return null;
  const live = await db.labSession.count({ where: { learnerId, labSlug: lab.slug, state: { in: ["starting", "ready", "suspended"] } } });
  if (live > 0) return null;
  if (cohort.startsAt && now < cohort.startsAt) return "examNotOpen";
  if (cohort.endsAt && now > cohort.endsAt) return "examClosed";
  const used = await db.examAttempt.count({ where: { learnerId, labSlug: lab.slug, session: { cohortId: cohort.cohortId } } });
  return used >= cohort.examAttempts ? "examAttemptsUsed" : null;
}

/** Makes the attempt of a new exam session (none twice: one per session). */
export async function openAttempt(
  db: Db,
  sessionId: string,
  learnerId: string,
  lab: Pick<Lab, "slug" | "manifest">,
  cohortMinutes?: number | null,
): Promise<void> {
  const exam = examOf(lab, cohortMinutes);
  if (!exam) return;
  await db.examAttempt.createMany({
    data: [{ sessionId, learnerId, labSlug: lab.slug, durationMinutes: exam.durationMinutes, passPercent: exam.passPercent }],
    skipDuplicates: true,
  });
}

/**
 * Starts the clock of a session's attempt when its learner first opens the exam with the machines
 * ready (a set made ahead of class waits for them): deadline = now + the exam's duration. From
 * then on the clock runs on the server, page or no page.
 */
export async function startClock(db: Db, sessionId: string): Promise<number> {
  return db.$executeRaw`
    UPDATE "ExamAttempt" a
       SET "state" = 'running'::"ExamState", "startedAt" = (now() AT TIME ZONE 'UTC'),
           "deadline" = (now() AT TIME ZONE 'UTC') + make_interval(mins => a."durationMinutes")
      FROM "LabSession" s
     WHERE a."sessionId" = ${sessionId} AND s."id" = a."sessionId" AND a."state" = 'starting'::"ExamState"
       AND s."state" = 'ready'::"LabSessionState"`;
}

/**
 * Hands in running attempts: one session's (the learner's submit) or every one past its deadline
 * (`time`). Moves them to scoring and closes their sessions' input in one statement; returns the
 * learners whose sockets must be re-decided.
 */
export async function handIn(db: Db, by: ExamSubmitReason, sessionId?: string): Promise<{ sessionId: string; learnerId: string }[]> {
  return db.$queryRaw<{ sessionId: string; learnerId: string }[]>`
    WITH t AS (SELECT (now() AT TIME ZONE 'UTC') AS at),
    moved AS (
      UPDATE "ExamAttempt" a
         SET "state" = 'scoring'::"ExamState", "submittedBy" = ${by}::"ExamSubmitReason",
             "submittedAt" = LEAST(t.at, a."deadline")
        FROM t
       WHERE a."state" = 'running'::"ExamState"
         AND (CASE WHEN ${by}::text = 'time' THEN a."deadline" <= t.at ELSE a."sessionId" = ${sessionId ?? null}::text END)
      RETURNING a."sessionId", a."learnerId"
    ),
    closed AS (
      UPDATE "LabSession" s SET "inputClosedAt" = t.at FROM moved, t WHERE s."id" = moved."sessionId" RETURNING s."id"
    )
    SELECT moved."sessionId", moved."learnerId" FROM moved`;
}

/** What the exam page shows while the exam runs: tasks, the clock, the learner's own marks; no result. */
export interface ExamView {
  sessionId: string;
  labSlug: string;
  title: string;
  state: ExamState;
  deadline: string | null;
  serverNow: string;
  durationMinutes: number;
  passPercent: number;
  tasks: { id: string; title: string; machine: string; points: number; textMarkdown: string }[];
  marks: Record<string, { flagged: boolean; done: boolean }>;
  currentTaskId: string | null;
  submittedAt: string | null;
  submittedBy: ExamSubmitReason | null;
}

const Marks = z.record(z.string(), z.object({ flagged: z.boolean().default(false), done: z.boolean().default(false) }));

/** The exam page's view of a session's attempt; 404 when the session is no exam. */
export async function examView(db: Db, lab: Lab, sessionId: string, viewer: "owner" | "watch"): Promise<ExamView> {
  // The page polls this: one read when the attempt exists and its clock runs; writes only before.
  let attempt = await db.examAttempt.findUnique({ where: { sessionId } });
  if (!attempt) {
    // Made with the session; made here if that write was lost (the session is an exam's all the same).
    const session = await db.labSession.findUnique({
      where: { id: sessionId },
      select: { learnerId: true, gradedAtEnd: true, cohort: { select: { examMinutes: true } } },
    });
    if (session?.gradedAtEnd) await openAttempt(db, sessionId, session.learnerId, lab, session.cohort?.examMinutes);
  }
  // The learner opening it starts the clock; a watcher looking does not.
  if (viewer === "owner" && (!attempt || attempt.state === "starting") && (await startClock(db, sessionId)) > 0) attempt = null;
  attempt ??= await db.examAttempt.findUnique({ where: { sessionId } });
  if (!attempt) throw new Denied(404, "noSuchExam");
  return {
    sessionId,
    labSlug: attempt.labSlug,
    title: lab.manifest.title,
    state: attempt.state,
    deadline: attempt.deadline?.toISOString() ?? null,
    serverNow: new Date().toISOString(),
    durationMinutes: attempt.durationMinutes,
    passPercent: attempt.passPercent,
    tasks: lab.steps.map((s) => ({ id: s.id, title: s.title, machine: s.machine, points: s.points ?? 1, textMarkdown: s.textMarkdown })),
    marks: Marks.catch({}).parse(attempt.marks),
    currentTaskId: attempt.currentTaskId,
    submittedAt: attempt.submittedAt?.toISOString() ?? null,
    submittedBy: attempt.submittedBy,
  };
}

/** An exam's task by id, or 404. */
function requireTask(lab: Lab, taskId: string): void {
  if (!lab.steps.some((s) => s.id === taskId)) throw new Denied(404, "noSuchStep");
}

/** The attempt's state when an action needs it running: 404 without one, 409 when not running. */
async function requireRunning(db: Db, sessionId: string): Promise<void> {
  const attempt = await db.examAttempt.findUnique({ where: { sessionId }, select: { state: true } });
  if (!attempt) throw new Denied(404, "noSuchExam");
  if (attempt.state !== "running") throw new Denied(409, "examNotRunning");
}

/** Sets the learner's own marks on a task (flagged for review, done); only while the exam runs. */
export async function setMark(
  db: Db,
  lab: Lab,
  sessionId: string,
  taskId: string,
  mark: { flagged?: boolean; done?: boolean },
): Promise<ExamView["marks"]> {
  requireTask(lab, taskId);
  const patch = JSON.stringify(Object.fromEntries(Object.entries(mark).filter(([, v]) => v !== undefined)));
  const rows = await db.$queryRaw<{ marks: unknown }[]>`
    UPDATE "ExamAttempt"
       SET "marks" = jsonb_set("marks", ARRAY[${taskId}::text], COALESCE("marks" -> ${taskId}::text, '{}'::jsonb) || ${patch}::jsonb)
     WHERE "sessionId" = ${sessionId} AND "state" = 'running'::"ExamState"
    RETURNING "marks"`;
  if (rows.length === 0) {
    await requireRunning(db, sessionId); // 404 or 409, whichever applies
    throw new Denied(409, "examNotRunning");
  }
  return Marks.catch({}).parse(rows[0]!.marks);
}

/** The learner moved to a task: recorded for time per task and the recording's markers (not twice in a row). */
export async function switchTask(db: Db, lab: Lab, sessionId: string, taskId: string): Promise<void> {
  requireTask(lab, taskId);
  await requireRunning(db, sessionId);
  await db.$transaction(async (tx) => {
    const moved = await tx.examAttempt.updateMany({
      where: { sessionId, state: "running", OR: [{ currentTaskId: null }, { currentTaskId: { not: taskId } }] },
      data: { currentTaskId: taskId },
    });
    if (moved.count === 0) return;
    const attempt = await tx.examAttempt.findUniqueOrThrow({
      where: { sessionId },
      select: { id: true, _count: { select: { switches: true } } },
    });
    if (attempt._count.switches < MAX_TASK_SWITCHES) await tx.examTaskSwitch.create({ data: { attemptId: attempt.id, taskId } });
  });
}

/** The learner hands the exam in; 409 unless it runs. Returns the learner whose sockets close. */
export async function submitExam(db: Db, sessionId: string): Promise<string> {
  await requireRunning(db, sessionId);
  const moved = await handIn(db, "learner", sessionId);
  if (moved.length === 0) throw new Denied(409, "examNotRunning");
  return moved[0]!.learnerId;
}
