/**
 * `labdeck labs test <slug>`: proves a lab on real machines. After the lab's setup, each step's
 * check must FAIL before its solution and PASS after it (and, for steps marked verifyByReboot,
 * pass again after the machine really reboots). Steps run in order, so each "before" sees the
 * state the earlier solutions left, as a learner would.
 */
import { CHECK_LIB, checkScript } from "../grader/grader";
import type { ScriptResult, SshExecPool } from "../machines/ssh-exec";
import type { SshEndpoint } from "../terminal/ssh";
import type { Lab } from "./load";
import { runLabSetup } from "./setup";

/** Longest a solution script may run, in seconds. */
const SOLUTION_TIMEOUT_S = 300;

export interface StepTestResult {
  stepId: string;
  before: ScriptResult;
  solution: ScriptResult;
  after: ScriptResult;
  afterReboot?: ScriptResult;
  ok: boolean;
  /** Why the step failed the test, in words. */
  problem?: string;
}

export interface LabTestMachines {
  endpoint(machine: string): Promise<SshEndpoint>;
  /** Reboots a machine and resolves once it answers SSH again; absent where machines cannot reboot. */
  reboot?(machine: string): Promise<void>;
}

export async function testLab(
  lab: Lab,
  machines: LabTestMachines,
  pool: SshExecPool,
  onStep?: (result: StepTestResult) => void,
): Promise<StepTestResult[]> {
  await runLabSetup(pool, lab, (m) => machines.endpoint(m));
  const results: StepTestResult[] = [];
  for (const step of lab.steps) {
    const checkOn = await machines.endpoint(step.machine);
    const check = () => pool.run(checkOn, checkScript(lab, step), step.timeoutSeconds);
    const before = await check();
    const solution = await pool.run(await machines.endpoint(step.solutionMachine ?? step.machine), `${CHECK_LIB}\n${step.solution.content}`, SOLUTION_TIMEOUT_S);
    const after = await check();
    const result: StepTestResult = { stepId: step.id, before, solution, after, ok: true };
    if (before.outcome !== "fail") result.problem = `check ${before.outcome === "pass" ? "passes" : `is ${before.outcome}`} before the solution`;
    else if (solution.outcome !== "pass") result.problem = `solution ${solution.outcome} (exit ${solution.exitCode}): ${solution.output}`;
    else if (after.outcome !== "pass") result.problem = `check ${after.outcome} after the solution: ${after.output}`;
    else if (step.verifyByReboot) {
      if (!machines.reboot) result.problem = "step needs a reboot proof but these machines cannot reboot (use --machines qemu)";
      else {
        await machines.reboot(step.machine);
        result.afterReboot = await check();
        if (result.afterReboot.outcome !== "pass") result.problem = `check ${result.afterReboot.outcome} after reboot: ${result.afterReboot.output}`;
      }
    }
    result.ok = result.problem === undefined;
    results.push(result);
    onStep?.(result);
  }
  return results;
}

/** The result table `labs test` prints. */
export function formatResults(lab: Lab, results: StepTestResult[]): string {
  const rows = [["step", "before (want fail)", "solution", "after (want pass)", "after reboot", "result"]];
  for (const r of results) {
    rows.push([
      r.stepId,
      r.before.outcome,
      r.solution.outcome,
      r.after.outcome,
      r.afterReboot?.outcome ?? (lab.steps.find((s) => s.id === r.stepId)?.verifyByReboot ? "-" : "n/a"),
      r.ok ? "OK" : `FAIL: ${r.problem}`,
    ]);
  }
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((row) => row[i]!.length)));
  return rows.map((row) => row.map((cell, i) => cell.padEnd(widths[i]!)).join("  ").trimEnd()).join("\n");
}
