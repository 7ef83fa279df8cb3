/**
 * A learner's progress through a lab as the browser sees it: the payload of
 * GET /api/sessions/:id/progress, of each `progress` event on GET /api/sessions/:id/events
 * (Server-Sent Events), and of POST /api/sessions/:id/check. Shared by server and browser.
 */
import { z } from "zod";

/**
 * proving: the current step of a verifyByReboot step whose check passed on this boot of its
 * machine; it becomes done when it passes again after a reboot (server/grader/reboot-proof.ts).
 */
export const StepState = z.enum(["locked", "current", "proving", "done"]);
export type StepState = z.infer<typeof StepState>;

export const CheckOutcome = z.enum([
  /** The check exited 0. */
  "pass",
  /** The check exited non-zero; its output says what is still wrong. */
  "fail",
  /** The check ran past its timeout and was killed. */
  "timeout",
  /** The machine did not answer over SSH. */
  "unreachable",
  /** Anything else (could not start the check). */
  "error",
]);
export type CheckOutcome = z.infer<typeof CheckOutcome>;

export const CheckResult = z.object({
  stepId: z.string(),
  outcome: CheckOutcome,
  /** manual: the learner pressed Check; poll: the grader's own run. */
  trigger: z.enum(["poll", "manual"]),
  /** The check's output (stdout + stderr, trimmed, at most SCRIPT_OUTPUT_MAX_BYTES of server/ssh/exec.ts), or the grader's explanation. */
  output: z.string(),
  /** ISO time the run finished. */
  at: z.string(),
  durationMs: z.number().int(),
});
export type CheckResult = z.infer<typeof CheckResult>;

export const Progress = z.object({
  sessionId: z.string(),
  /** The lab version the session runs (LabVersion.hash): its steps are these; the page shows the same version's texts. */
  labVersion: z.string(),
  steps: z.array(z.object({ id: z.string(), title: z.string(), state: StepState })),
  /** Id of the current step, null when every step is done. */
  currentStepId: z.string().nullable(),
  /**
   * What the learner should see of the checks: the newest run they asked for (Check button) or
   * the newest pass, whichever is newer. The grader's failing background runs are not shown
   * (they would flash every few seconds); instructors see every run.
   */
  lastCheck: CheckResult.nullable(),
  /** The current step passed now and waits for a reboot of `machine` to be done (its state is "proving"). */
  rebootProof: z.object({ stepId: z.string(), machine: z.string(), passedAt: z.string() }).nullable(),
  /** Step ids whose hint the learner has revealed. */
  hintsRevealed: z.array(z.string()),
  completed: z.boolean(),
});
export type Progress = z.infer<typeof Progress>;
