/**
 * `labs test` for the course's flagship lab on real VMs (QEMU, TCG here): after setup plants the
 * faults, every step's check fails before its solution, fails after each of its shortcuts (states
 * true only until the next boot, or that only look right: /run/modules-load.d + modprobe,
 * /run/sysctl.d + sysctl --system, runtime masks, a hand-typed record, ...), passes after each of
 * its alternatives (other correct fixes: swap.target masked with the fstab line kept, ...) and after
 * its solution, the VM reset to the step's snapshot between them; the steps that must hold after a
 * reboot (swap, sysctl) pass again after a real reboot of the solution, and fixtures marked
 * `# reboot: yes` are judged on a real new boot too (a unit's script in /usr/bin that turns swap on
 * is refused by the kernel's /proc/swaps; swap.target masked is accepted). The steps are split in
 * two halves tested at once on two VMs (splitSteps).
 */
import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { qemuLabMachines } from "../cli/lab-machines";
import { qemuProvider } from "../machines/qemu/provider";
import { IMAGE_BUILD_TIMEOUT_MS, testImage } from "../machines/qemu/test-image";
import { SshExecPool } from "../ssh/exec";
import { formatResults, testLab, type LabTestMachines } from "./lab-test";
import { loadLab, type LoadedStep } from "./load";

/** Per half: boot, setup, its steps' fixtures and one reboot under TCG on a shared 2-core host. */
const LAB_TEST_TIMEOUT_MS = 40 * 60_000;
/** Weight of a reboot against one fixture (a reboot takes ~3 fixtures' time under TCG). */
const REBOOT_WEIGHT = 3;

const log = pino({ level: "warn" }, pino.destination(2));
let dataDir: string;
let provider: ReturnType<typeof qemuProvider>;
const opened: { machines: LabTestMachines; close: () => Promise<void> }[] = [];
const pools: SshExecPool[] = [];

/**
 * The lab's steps in two halves of about equal work (fixtures, reboots), each tested on its own
 * VM at the same time: a TCG guest keeps one core busy, and this host has two. In each half the
 * other half's solutions still run, in order, so every step starts where a learner's would.
 */
function splitSteps(steps: readonly LoadedStep[]): [Set<string>, Set<string>] {
  const halves: [Set<string>, Set<string>] = [new Set(), new Set()];
  const load = [0, 0];
  const weight = (s: LoadedStep) => {
    const fixtures = [...s.shortcuts, ...s.alternatives];
    return 1 + fixtures.length + ((s.verifyByReboot ? 1 : 0) + fixtures.filter((f) => f.reboot).length) * REBOOT_WEIGHT;
  };
  for (const step of [...steps].sort((a, b) => weight(b) - weight(a) || a.id.localeCompare(b.id))) {
    const i = load[0]! <= load[1]! ? 0 : 1;
    halves[i]!.add(step.id);
    load[i]! += weight(step);
  }
  return halves;
}

describe("labs test preinstall-checks on real VMs", () => {
  beforeAll(async () => {
    const image = await testImage();
    dataDir = await fs.mkdtemp(path.join(os.tmpdir(), "ldl-"));
    provider = qemuProvider({ dataDir, image, log, bootTimeoutMs: 600_000 });
    // Only the machine the lab's setup, checks and solutions use (node01 and node02 take no part
    // in this lab), twice: one throw-away session per half of the steps.
    const made = await Promise.allSettled([0, 1].map((i) => qemuLabMachines(provider, ["controlplane"], (line) => console.log(`[half ${i + 1}] ${line}`))));
    for (const m of made) if (m.status === "fulfilled") opened.push(m.value);
    for (const m of made) if (m.status === "rejected") throw m.reason;
  }, IMAGE_BUILD_TIMEOUT_MS + 600_000);

  afterAll(async () => {
    for (const pool of pools) pool.closeAll();
    await Promise.all(opened.map((o) => o.close()));
    if (dataDir) await fs.rm(dataDir, { recursive: true, force: true });
  }, 120_000);

  it("every step fails before its solution and after each shortcut, passes after each alternative and the solution; swap and sysctl also after a real reboot of the solution", async () => {
    const lab = await loadLab(path.resolve("labs"), "preinstall-checks");
    const rebootSteps = lab.steps.filter((s) => s.verifyByReboot).map((s) => s.id);
    const used = new Set([...lab.steps.flatMap((s) => [s.machine, s.solutionMachine ?? s.machine]), ...Object.keys(lab.setup)]);
    expect([...used]).toEqual(["controlplane"]);
    expect(rebootSteps).toEqual(expect.arrayContaining(["swap-off", "sysctl"]));

    for (const step of lab.steps) expect(step.shortcuts.length, `${step.id} shortcuts`).toBeGreaterThan(0);

    // LABDECK_LAB_TEST_STEPS=a,b tests only those steps (the others' solutions still run): for a
    // local run under the shared lock's time limit. CI runs every step.
    const only = process.env.LABDECK_LAB_TEST_STEPS ? new Set(process.env.LABDECK_LAB_TEST_STEPS.split(",")) : undefined;
    const steps = lab.steps.filter((s) => !only || only.has(s.id));
    const halves = splitSteps(steps);
    expect([...halves[0], ...halves[1]].sort()).toEqual(steps.map((s) => s.id).sort());
    const started = Date.now();
    const runs = await Promise.all(
      halves.map(async (half, i) => {
        const pool = new SshExecPool();
        pools.push(pool);
        const tag = `[half ${i + 1}]`;
        return testLab(
          lab,
          opened[i]!.machines,
          pool,
          (r) => console.log(`${tag} ${r.ok ? "ok  " : "FAIL"} ${r.stepId}${r.problem ? `: ${r.problem}` : ""}`),
          (step, f) =>
            console.log(
              `${tag}   ${f.ok ? "ok  " : "FAIL"} ${step.id} ${f.kind} ${f.name} (${f.check.outcome}${f.afterReboot ? `, after reboot ${f.afterReboot.outcome}` : ""}; ` +
                `restore ${f.restoreMs} ms, script ${f.script.durationMs} ms, check ${f.check.durationMs} ms)${f.problem ? `: ${f.problem}` : ""}`,
            ),
          // A real reboot after each reboot-proof step's solution; its alternatives pass live but are
          // not each rebooted here (8 more TCG reboots, ~10 min of CI; `labs test` does them all).
          { only: half, rebootAlternatives: false },
        );
      }),
    );
    const results = lab.steps.flatMap((s) => runs.flat().filter((r) => r.stepId === s.id));
    console.log(`${formatResults(lab, results)}\nlab test: ${((Date.now() - started) / 1000).toFixed(0)} s after boot`);
    expect(results.map((r) => [r.stepId, r.problem ?? "ok"])).toEqual(steps.map((s) => [s.id, "ok"]));
    // Every fixture ran, with the outcome its kind wants.
    const ran = results.flatMap((r) => r.fixtures.map((f) => `${r.stepId}/${f.kind}/${f.name}: ${f.check.outcome}`));
    const want = steps.flatMap((s) => [
      ...s.shortcuts.map((f) => `${s.id}/shortcut/${f.name}: fail`),
      ...s.alternatives.map((f) => `${s.id}/alternative/${f.name}: pass`),
    ]);
    expect(ran).toEqual(want);
    for (const id of rebootSteps.filter((id) => !only || only.has(id))) {
      const r = results.find((x) => x.stepId === id)!;
      expect(r.afterReboot?.outcome).toBe("pass");
      const step = lab.steps.find((s) => s.id === id)!;
      const marked = [...step.shortcuts, ...step.alternatives].filter((f) => f.reboot).map((f) => f.name);
      // Only fixtures marked `# reboot: yes` are rebooted here, each with its verdict on the new boot.
      for (const f of r.fixtures) {
        if (marked.includes(f.name)) expect(f.afterReboot?.outcome, `${id} ${f.name} after reboot`).toBe(f.kind === "shortcut" ? "fail" : "pass");
        else expect(f.afterReboot, `${id} ${f.name}: not rebooted in this test`).toBeUndefined();
      }
    }
  }, LAB_TEST_TIMEOUT_MS);
});
