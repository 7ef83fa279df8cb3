/**
 * `labdeck labs test <slug>`: proves a lab on real machines. After the lab's setup, each step's
 * check must FAIL before its solution, FAIL after each of its shortcuts (states true only until the
 * next boot, or that only look right), PASS after each of its alternatives (other correct fixes)
 * and PASS after its solution; for steps marked verifyByReboot the machine really reboots after
 * the solution and after each alternative (unless `rebootAlternatives: false`), and the check must pass again; a
 * fixture marked `# reboot: yes` is always rebooted (a shortcut must still fail then). Between fixtures the
 * step's machines go back to the state before the step (a VM snapshot taken then: `snapshot` /
 * `restore`). Steps run in order, so each "before" sees the state the earlier solutions left, as a
 * learner would.
 */
import { CHECK_LIB, checkScript } from "./check-script";
import type { ScriptResult, SshExecPool } from "../ssh/exec";
import type { SshEndpoint } from "../ssh/connect";
import type { Fixture, Lab, LoadedStep } from "./load";
import { runLabSetup } from "./setup";

/** Longest a solution or fixture script may run, in seconds. */
const SOLUTION_TIMEOUT_S = 300;
/** The snapshot each step's fixtures start from (one at a time: replaced at the next step). */
const STEP_SNAPSHOT = "labs-test-step";
/** Pause after closing SSH connections before a snapshot is saved or loaded, ms. */
const CLOSE_SETTLE_MS = 500;
/** Longest wait for SSH after a snapshot's load, ms (the guest runs on at once; slirp may need a retry). */
const SSH_AFTER_RESTORE_MS = 60_000;

export interface FixtureResult {
  kind: "shortcut" | "alternative";
  name: string;
  file: string;
  /** Time to put the machines back to the state before the step, ms (0 for the first fixture). */
  restoreMs: number;
  script: ScriptResult;
  check: ScriptResult;
  rebootMs?: number;
  afterReboot?: ScriptResult;
  ok: boolean;
  problem?: string;
}

export interface StepTestResult {
  stepId: string;
  before: ScriptResult;
  fixtures: FixtureResult[];
  /** Time to take the step's snapshot, ms (when it has fixtures). */
  snapshotMs?: number;
  solution: ScriptResult;
  after: ScriptResult;
  /** Reboot command to SSH answering on a new boot, ms. */
  rebootMs?: number;
  afterReboot?: ScriptResult;
  ok: boolean;
  /** Why the step failed the test, in words (the first problem found). */
  problem?: string;
}

export interface LabTestMachines {
  endpoint(machine: string): Promise<SshEndpoint>;
  /** Reboots a machine and resolves once it answers SSH again; absent where machines cannot reboot. */
  reboot?(machine: string): Promise<void>;
  /** Saves a machine's whole state under a name (replacing it); absent where machines cannot be reset. */
  snapshot?(machine: string, tag: string): Promise<void>;
  /** Puts a machine back to a saved state. */
  restore?(machine: string, tag: string): Promise<void>;
}

export async function testLab(
  lab: Lab,
  machines: LabTestMachines,
  pool: SshExecPool,
  onStep?: (result: StepTestResult) => void,
  onFixture?: (step: LoadedStep, result: FixtureResult) => void,
  scope: {
    /** Test only these steps; the others' solutions still run, in order, so later steps start where a learner would. */
    only?: ReadonlySet<string>;
    /**
     * Reboot after each alternative of a verifyByReboot step too, not only after its solution
     * (default true). Each reboot is ~75 s under TCG; CI's lab test proves the solutions' reboots.
     */
    rebootAlternatives?: boolean;
  } = {},
): Promise<StepTestResult[]> {
  const { only, rebootAlternatives = true } = scope;
  await runLabSetup(pool, lab, (m) => machines.endpoint(m));
  const results: StepTestResult[] = [];
  for (const step of lab.steps) {
    if (only && !only.has(step.id)) {
      const solution = await pool.run(await machines.endpoint(step.solutionMachine ?? step.machine), `${CHECK_LIB}\n${step.solution.content}`, SOLUTION_TIMEOUT_S);
      if (solution.outcome !== "pass") throw new Error(`${step.id}: solution ${solution.outcome} (exit ${solution.exitCode}): ${solution.output}`);
      continue;
    }
    const result = await testStep(lab, step, machines, pool, (f) => onFixture?.(step, f), rebootAlternatives);
    results.push(result);
    onStep?.(result);
  }
  return results;
}

async function testStep(
  lab: Lab,
  step: LoadedStep,
  machines: LabTestMachines,
  pool: SshExecPool,
  onFixture: (r: FixtureResult) => void,
  rebootAlternatives: boolean,
): Promise<StepTestResult> {
  const checkOn = await machines.endpoint(step.machine);
  const solutionMachine = step.solutionMachine ?? step.machine;
  const touched = [...new Set([step.machine, solutionMachine])];
  const check = () => pool.run(checkOn, checkScript(lab, step), step.timeoutSeconds);
  const runScript = async (content: string) => pool.run(await machines.endpoint(solutionMachine), `${CHECK_LIB}\n${content}`, SOLUTION_TIMEOUT_S);
  /**
   * Open SSH connections do not survive a snapshot's load: the pool's are closed first (and given
   * a moment to finish, so no half-closed connection is saved), and SSH is asked until it answers.
   */
  const closeConnections = async () => {
    for (const m of touched) pool.close(await machines.endpoint(m));
    await new Promise((r) => setTimeout(r, CLOSE_SETTLE_MS));
  };
  const sshAnswers = async () => {
    for (const m of touched) {
      const endpoint = await machines.endpoint(m);
      const deadline = Date.now() + SSH_AFTER_RESTORE_MS;
      for (;;) {
        const probe = await pool.run(endpoint, "true", 10);
        if (probe.outcome === "pass") break;
        pool.close(endpoint);
        if (Date.now() > deadline) throw new Error(`${m}: no SSH within ${SSH_AFTER_RESTORE_MS / 1000} s after a snapshot's load: ${probe.output}`);
        await new Promise((r) => setTimeout(r, 1_000));
      }
    }
  };
  const reboot = async (): Promise<number> => {
    const started = Date.now();
    await machines.reboot!(step.machine);
    return Date.now() - started;
  };

  const fixtures = [...step.shortcuts.map((f) => ["shortcut", f] as const), ...step.alternatives.map((f) => ["alternative", f] as const)];
  const problems: string[] = [];
  let snapshotMs: number | undefined;
  const canReset = fixtures.length > 0 && machines.snapshot && machines.restore;
  if (fixtures.length > 0 && !canReset) problems.push(`${fixtures.length} fixtures need machines that can be reset (use --machines qemu)`);
  if (canReset) {
    await closeConnections();
    const started = Date.now();
    for (const m of touched) await machines.snapshot!(m, STEP_SNAPSHOT);
    snapshotMs = Date.now() - started;
    await sshAnswers();
  }
  const restore = async (): Promise<number> => {
    await closeConnections();
    const started = Date.now();
    for (const m of touched) await machines.restore!(m, STEP_SNAPSHOT);
    await sshAnswers();
    return Date.now() - started;
  };

  const before = await check();
  if (before.outcome !== "fail") problems.push(`check ${before.outcome === "pass" ? "passes" : `is ${before.outcome}`} before the solution`);

  const fixtureResults: FixtureResult[] = [];
  if (canReset) {
    let dirty = false;
    for (const [kind, fixture] of fixtures) {
      const restoreMs = dirty ? await restore() : 0;
      dirty = true;
      const rebootAfter = fixture.reboot || (step.verifyByReboot && rebootAlternatives && kind === "alternative");
      const r = await runFixture(kind, fixture, restoreMs, runScript, check, rebootAfter && machines.reboot ? reboot : undefined);
      if (fixture.reboot && !machines.reboot) r.problem ??= "fixture needs a reboot but these machines cannot reboot (use --machines qemu)";
      fixtureResults.push(r);
      onFixture(r);
      if (r.problem) problems.push(`${kind} ${fixture.name}: ${r.problem}`);
    }
    if (dirty) await restore();
  }

  const solution = await runScript(step.solution.content);
  const after = await check();
  const result: StepTestResult = { stepId: step.id, before, fixtures: fixtureResults, snapshotMs, solution, after, ok: true };
  if (solution.outcome !== "pass") problems.push(`solution ${solution.outcome} (exit ${solution.exitCode}): ${solution.output}`);
  else if (after.outcome !== "pass") problems.push(`check ${after.outcome} after the solution: ${after.output}`);
  else if (step.verifyByReboot) {
    if (!machines.reboot) problems.push("step needs a reboot proof but these machines cannot reboot (use --machines qemu)");
    else {
      result.rebootMs = await reboot();
      result.afterReboot = await check();
      if (result.afterReboot.outcome !== "pass") problems.push(`check ${result.afterReboot.outcome} after reboot: ${result.afterReboot.output}`);
    }
  }
  result.problem = problems[0];
  result.ok = problems.length === 0;
  return result;
}

async function runFixture(
  kind: FixtureResult["kind"],
  fixture: Fixture,
  restoreMs: number,
  runScript: (content: string) => Promise<ScriptResult>,
  check: () => Promise<ScriptResult>,
  reboot: (() => Promise<number>) | undefined,
): Promise<FixtureResult> {
  const script = await runScript(fixture.content);
  const checked = await check();
  const r: FixtureResult = { kind, name: fixture.name, file: fixture.file, restoreMs, script, check: checked, ok: true };
  if (script.outcome !== "pass") r.problem = `script ${script.outcome} (exit ${script.exitCode}): ${script.output}`;
  else if (kind === "shortcut") {
    const missing = fixture.expectOutput.filter((text) => !checked.output.includes(text));
    if (checked.outcome !== "fail") r.problem = `check ${checked.outcome === "pass" ? "passes" : `is ${checked.outcome}`} (want fail)`;
    else if (missing.length > 0) r.problem = `check fails but its output lacks ${missing.map((t) => JSON.stringify(t)).join(", ")}: ${checked.output}`;
    else if (reboot) {
      // Refused on the new boot too, by what the kernel says then (not by a scan of the files).
      r.rebootMs = await reboot();
      r.afterReboot = await check();
      const lacking = fixture.expectAfterReboot.filter((text) => !r.afterReboot!.output.includes(text));
      if (r.afterReboot.outcome !== "fail") r.problem = `check ${r.afterReboot.outcome === "pass" ? "passes" : `is ${r.afterReboot.outcome}`} after reboot (want fail)`;
      else if (lacking.length > 0) r.problem = `check fails after reboot but its output lacks ${lacking.map((t) => JSON.stringify(t)).join(", ")}: ${r.afterReboot.output}`;
    }
  } else if (checked.outcome !== "pass") r.problem = `check ${checked.outcome} (want pass): ${checked.output}`;
  else if (reboot) {
    r.rebootMs = await reboot();
    r.afterReboot = await check();
    if (r.afterReboot.outcome !== "pass") r.problem = `check ${r.afterReboot.outcome} after reboot (want pass): ${r.afterReboot.output}`;
  }
  r.ok = r.problem === undefined;
  return r;
}

const seconds = (ms: number | undefined) => (ms === undefined ? "-" : `${(ms / 1000).toFixed(1)}`);

/** The result table `labs test` prints: per step, then the timings a learner would feel. */
export function formatResults(lab: Lab, results: StepTestResult[]): string {
  const rows = [["step", "before (want fail)", "solution", "after (want pass)", "after reboot", "shortcuts (want fail)", "alternatives (want pass)", "result"]];
  const timing = [["step", "fix s", "fix→pass s", "reboot→pass s", "snapshot s", "restores s", "fixture reboots s"]];
  for (const r of results) {
    const step = lab.steps.find((s) => s.id === r.stepId);
    const count = (kind: FixtureResult["kind"]) => {
      const list = r.fixtures.filter((f) => f.kind === kind);
      const total = kind === "shortcut" ? step?.shortcuts.length : step?.alternatives.length;
      return total ? `${list.filter((f) => f.ok).length}/${total} ok` : "none";
    };
    rows.push([
      r.stepId,
      r.before.outcome,
      r.solution.outcome,
      r.after.outcome,
      r.afterReboot?.outcome ?? (step?.verifyByReboot ? "-" : "n/a"),
      count("shortcut"),
      count("alternative"),
      r.ok ? "OK" : `FAIL: ${r.problem}`,
    ]);
    const restores = r.fixtures.map((f) => f.restoreMs).filter((ms) => ms > 0);
    const fixtureReboots = r.fixtures.map((f) => f.rebootMs).filter((ms): ms is number => ms !== undefined);
    timing.push([
      r.stepId,
      seconds(r.solution.durationMs),
      seconds(r.solution.durationMs + r.after.durationMs),
      r.rebootMs === undefined ? "n/a" : seconds(r.rebootMs + (r.afterReboot?.durationMs ?? 0)),
      seconds(r.snapshotMs),
      restores.length ? `${seconds(restores.reduce((a, b) => a + b, 0))} (${restores.length}×, max ${seconds(Math.max(...restores))})` : "-",
      fixtureReboots.length ? `${seconds(fixtureReboots.reduce((a, b) => a + b, 0))} (${fixtureReboots.length}×)` : "-",
    ]);
  }
  return `${table(rows)}\n\n${table(timing)}`;
}

function table(rows: string[][]): string {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((row) => row[i]!.length)));
  return rows.map((row) => row.map((cell, i) => cell.padEnd(widths[i]!)).join("  ").trimEnd()).join("\n");
}
