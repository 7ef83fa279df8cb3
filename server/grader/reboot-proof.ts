/**
 * Reboot proof of a step marked `verifyByReboot`: the step is not done when its check
 * first passes. It is "passed now" (LabSession.proofStepId/proofBootId/proofPassedAt) until the
 * check passes again on a new boot of its machine, so a state that holds only until the next
 * boot never completes it, whatever the check reads.
 *
 * A check of such a step reads the machine's boot facts first, on its own line marked with a
 * per-run nonce (the learner's output cannot forge a line it cannot predict, and ours comes before
 * any of theirs). A new boot is a different boot id AND an uptime shorter than the time since the
 * pass (measured on the server's clock and the machine's monotonic uptime, so clock skew does not
 * matter): rewriting one /proc file by a bind mount does not make a reboot, and a mount over
 * either file gives no facts at all (bootFactsScript), so two such mounts do not make one either.
 *
 * Pure: the grader (grader.ts) runs the script and writes what `decide` says.
 */
import { randomBytes } from "node:crypto";

/** The machine's identity of this boot and how long it has run. */
export interface BootFacts {
  bootId: string;
  uptimeSeconds: number;
}

/** The session's "passed now" record of its current step. */
export interface PendingProof {
  stepId: string;
  bootId: string;
  passedAt: Date;
}

/** What a verifyByReboot step's check result does to its proof. */
export type ProofDecision =
  /** First pass (or a pass after the record was cleared): record "passed now" on this boot. */
  | { kind: "record"; bootId: string }
  /** Nothing changes: a pass on the same boot, or no verdict (unreachable while it reboots, a timeout). */
  | { kind: "keep" }
  /** Passed on a new boot: the step is done. */
  | { kind: "proven" }
  /** Failed (on either boot): "passed now" no longer holds. */
  | { kind: "clear" };

/** Seconds of slack between the server's clock and the machine's uptime (the check's own run, SSH). */
const UPTIME_SLACK_SECONDS = 30;

/** A new per-run nonce for the boot facts line. */
export function newNonce(): string {
  return randomBytes(8).toString("hex");
}

/**
 * Shell that prints the boot facts line; goes before the check (it never fails the check). Shell
 * builtins only (no program the learner could stand in for), in a subshell (no variable leaks into
 * the check). When a mount covers the files it reads (two bind mounts could fake a new boot id and
 * a short uptime), it prints "covered": no facts, so no proof.
 */
export function bootFactsScript(nonce: string): string {
  return [
    "( b= u= ; read -r b </proc/sys/kernel/random/boot_id; read -r u _ </proc/uptime",
    "  while read -r _ _ _ _ m _; do case $m in /proc/uptime | /proc/sys | /proc/sys/kernel | /proc/sys/kernel/random | /proc/sys/kernel/random/boot_id) b=covered ;; esac; done </proc/self/mountinfo",
    `  printf '@labdeck-boot-${nonce} %s %s\\n' "$b" "$u" ) 2>/dev/null`,
    "",
  ].join("\n");
}

const BOOT_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/**
 * Takes the boot facts line out of a check's output: the facts (null when the line is missing or
 * malformed, e.g. the machine has no /proc boot id) and the output the learner sees, without it.
 */
export function takeBootFacts(output: string, nonce: string): { facts: BootFacts | null; output: string } {
  const marker = `@labdeck-boot-${nonce} `;
  const start = output.indexOf(marker);
  if (start < 0) return { facts: null, output };
  const end = output.indexOf("\n", start);
  const line = output.slice(start + marker.length, end < 0 ? undefined : end);
  const rest = (output.slice(0, start) + (end < 0 ? "" : output.slice(end + 1))).trim();
  const [bootId = "", uptime = ""] = line.trim().split(" ");
  const uptimeSeconds = Number(uptime);
  if (!BOOT_ID.test(bootId) || !Number.isFinite(uptimeSeconds) || uptimeSeconds < 0) return { facts: null, output: rest };
  return { facts: { bootId, uptimeSeconds }, output: rest };
}

/**
 * What a check result of step `stepId` does to the session's proof. `pending` is the session's
 * record (any step: one of another step counts as none), `now` the server's time.
 */
export function decide(
  stepId: string,
  outcome: "pass" | "fail" | "timeout" | "unreachable" | "error",
  facts: BootFacts | null,
  pending: PendingProof | null,
  now: Date,
): ProofDecision {
  const mine = pending && pending.stepId === stepId ? pending : null;
  if (outcome === "fail") return mine ? { kind: "clear" } : { kind: "keep" };
  if (outcome !== "pass" || !facts) return { kind: "keep" };
  if (!mine) return { kind: "record", bootId: facts.bootId };
  if (facts.bootId === mine.bootId) return { kind: "keep" };
  const sincePassSeconds = (now.getTime() - mine.passedAt.getTime()) / 1000;
  // A different boot id on a machine up since before the pass is not a reboot (a faked boot_id).
  if (facts.uptimeSeconds > sincePassSeconds + UPTIME_SLACK_SECONDS) return { kind: "keep" };
  return { kind: "proven" };
}
