/**
 * `labs test` for the course's flagship lab on real VMs (QEMU, TCG here): after setup plants the
 * faults, every step's check fails before its solution, fails after each of its shortcuts (states
 * true only until the next boot, or that only look right: /run/modules-load.d + modprobe,
 * /run/sysctl.d + sysctl --system, runtime masks, a hand-typed record, ...), passes after each of
 * its alternatives (other correct fixes: swap.target masked with the fstab line kept, ...) and after
 * its solution, the VM reset to the step's snapshot between them; the steps that must hold after a
 * reboot (swap, sysctl) pass again after a real reboot, for the solution and every alternative.
 */
import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { qemuLabMachines } from "../machines/qemu/lab-machines";
import { qemuProvider } from "../machines/qemu/provider";
import { IMAGE_BUILD_TIMEOUT_MS, testImage } from "../machines/qemu/test-image";
import { SshExecPool } from "../machines/ssh-exec";
import { formatResults, testLab, type LabTestMachines } from "./lab-test";
import { loadLab } from "./load";

/** Boot of three VMs, setup, seven steps, their fixtures and ten reboots under TCG on a shared 2-core host. */
const LAB_TEST_TIMEOUT_MS = 40 * 60_000;

const log = pino({ level: "warn" }, pino.destination(2));
let dataDir: string;
let opened: { machines: LabTestMachines; close: () => Promise<void> } | undefined;
const pool = new SshExecPool();

describe("labs test preinstall-checks on real VMs", () => {
  beforeAll(async () => {
    const image = await testImage();
    dataDir = await fs.mkdtemp(path.join(os.tmpdir(), "ldl-"));
    const provider = qemuProvider({ dataDir, image, log, bootTimeoutMs: 600_000 });
    // Only the machine the lab's setup, checks and solutions use: node01 and node02 take no part in
    // this lab, and two idle TCG guests would slow every check and reboot on a 2-core host.
    opened = await qemuLabMachines(provider, ["controlplane"], (line) => console.log(line));
  }, IMAGE_BUILD_TIMEOUT_MS + 600_000);

  afterAll(async () => {
    pool.closeAll();
    await opened?.close();
    if (dataDir) await fs.rm(dataDir, { recursive: true, force: true });
  }, 120_000);

  it("every step fails before its solution and after each shortcut, passes after each alternative and the solution; swap and sysctl also after a real reboot", async () => {
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
    const started = Date.now();
    const results = await testLab(
      lab,
      opened!.machines,
      pool,
      (r) => console.log(`${r.ok ? "ok  " : "FAIL"} ${r.stepId}${r.problem ? `: ${r.problem}` : ""}`),
      (step, f) => console.log(`  ${f.ok ? "ok  " : "FAIL"} ${step.id} ${f.kind} ${f.name} (${f.check.outcome}${f.afterReboot ? `, after reboot ${f.afterReboot.outcome}` : ""})${f.problem ? `: ${f.problem}` : ""}`),
      only,
    );
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
      for (const f of r.fixtures.filter((x) => x.kind === "alternative")) expect(f.afterReboot?.outcome, `${id} ${f.name} after reboot`).toBe("pass");
    }
  }, LAB_TEST_TIMEOUT_MS);
});
