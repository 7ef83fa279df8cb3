/**
 * Browser end of the exam API (/api/sessions/:id/exam…): the attempt as the learner sees it while
 * it runs, the learner's marks, task switches, the submission and the result. Every answer is
 * parsed with zod here (requestJson, shared with the grader API), so components only see valid
 * data or a GraderApiError (409 when an action does not fit the attempt's state).
 */
import { z } from "zod";
import { requestJson } from "@/components/lab/grader-api";

export const ExamState = z.enum(["starting", "running", "scoring", "scored"]);
export type ExamState = z.infer<typeof ExamState>;

/** A task as the learner may see it: never its checks, hint or solution. */
export const ExamTask = z.object({
  id: z.string(),
  title: z.string(),
  machine: z.string(),
  points: z.number(),
  textMarkdown: z.string(),
});
export type ExamTask = z.infer<typeof ExamTask>;

export const ExamMark = z.object({ flagged: z.boolean(), done: z.boolean() });
export type ExamMark = z.infer<typeof ExamMark>;
export const ExamMarks = z.record(z.string(), ExamMark);
export type ExamMarks = z.infer<typeof ExamMarks>;

const SubmittedBy = z.enum(["learner", "time"]).nullable();

/** GET /api/sessions/:id/exam. */
export const ExamView = z.object({
  sessionId: z.string(),
  labSlug: z.string(),
  title: z.string(),
  state: ExamState,
  /** ISO; null while the machines start (the time starts when they are ready). */
  deadline: z.string().nullable(),
  /** The server's clock when it answered, ISO: corrects the page's clock. */
  serverNow: z.string(),
  durationMinutes: z.number(),
  passPercent: z.number(),
  tasks: z.array(ExamTask),
  marks: ExamMarks,
  currentTaskId: z.string().nullable(),
  submittedAt: z.string().nullable(),
  submittedBy: SubmittedBy,
});
export type ExamView = z.infer<typeof ExamView>;

const CheckOutcome = z.enum(["pass", "fail", "timeout", "error", "unreachable"]);
export type CheckOutcome = z.infer<typeof CheckOutcome>;

/** One run of a check at scoring. */
export const CheckRun = z.object({ outcome: CheckOutcome, output: z.string(), durationMs: z.number() });
export type CheckRun = z.infer<typeof CheckRun>;

export const ResultCheck = z.object({
  id: z.string(),
  title: z.string(),
  points: z.number(),
  maxPoints: z.number(),
  now: CheckRun.nullable(),
  /** The verdict on a new boot of the task's machine (requiresReboot tasks), null otherwise. */
  afterReboot: CheckRun.nullable(),
});
export type ResultCheck = z.infer<typeof ResultCheck>;

export const ResultTask = z.object({
  id: z.string(),
  title: z.string(),
  machine: z.string(),
  points: z.number(),
  maxPoints: z.number(),
  requiresReboot: z.boolean(),
  timeMs: z.number(),
  /** Shell text. */
  solution: z.string(),
  checks: z.array(ResultCheck),
});
export type ResultTask = z.infer<typeof ResultTask>;

/** GET /api/sessions/:id/exam/result once scored. */
export const ExamResult = z.object({
  state: z.literal("scored"),
  score: z.number(),
  maxScore: z.number(),
  percent: z.number(),
  passPercent: z.number(),
  passed: z.boolean(),
  submittedAt: z.string(),
  submittedBy: SubmittedBy,
  scoredAt: z.string(),
  tasks: z.array(ResultTask),
});
export type ExamResult = z.infer<typeof ExamResult>;

const MarksResponse = z.object({ marks: ExamMarks });
const SubmitResponse = z.object({ state: ExamState });

function examPath(sessionId: string): string {
  return `/api/sessions/${encodeURIComponent(sessionId)}/exam`;
}

function jsonBody(method: "PUT" | "POST", body: unknown): RequestInit {
  return { method, headers: { "content-type": "application/json" }, body: JSON.stringify(body) };
}

export function fetchExam(sessionId: string, signal?: AbortSignal): Promise<ExamView> {
  return requestJson(examPath(sessionId), { signal }, ExamView);
}

/** Sets the learner's own marks on a task (flag for review, done); answers every task's marks. */
export async function putMark(sessionId: string, taskId: string, mark: Partial<ExamMark>): Promise<ExamMarks> {
  return (await requestJson(`${examPath(sessionId)}/marks`, jsonBody("PUT", { taskId, ...mark }), MarksResponse)).marks;
}

/** Tells the server the learner now works on `taskId` (time per task, a recording marker). 204. */
export async function postTask(sessionId: string, taskId: string): Promise<void> {
  await requestJson(`${examPath(sessionId)}/task`, jsonBody("POST", { taskId }), z.unknown());
}

/** Ends the attempt now; scoring runs on the server (202). */
export async function submitExam(sessionId: string): Promise<ExamState> {
  return (await requestJson(`${examPath(sessionId)}/submit`, { method: "POST" }, SubmitResponse)).state;
}

export function fetchResult(sessionId: string, signal?: AbortSignal): Promise<ExamResult> {
  return requestJson(`${examPath(sessionId)}/result`, { signal }, ExamResult);
}

/** The recording of the attempt at the moment the learner turned to a task (`task:<id>` markers). */
export function taskReplayUrl(sessionId: string, machine: string, taskId: string): string {
  const query = new URLSearchParams({ machine, marker: `task:${taskId}` });
  return `/replay/${encodeURIComponent(sessionId)}?${query}`;
}
