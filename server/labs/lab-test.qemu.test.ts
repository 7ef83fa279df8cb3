/**
 * `labs test` for the course's flagship lab on real VMs (QEMU, TCG here): after setup plants the
 * faults, every step's check fails before its solution and passes after it, and the steps that
 * must hold after a reboot (swap, sysctl) pass again after a real reboot of the machine.
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

/** Boot of three VMs, setup, seven steps and two reboots under TCG on a shared 2-core host. */
const LAB_TEST_TIMEOUT_MS = 20 * 60_000;

const log = pino({ level: "warn" }, pino.destination(2));
let dataDir: string;
let opened: { machines: LabTestMachines; close: () => Promise<void> } | undefined;
const pool = new SshExecPool();

describe("labs test preinstall-checks on real VMs", () => {
  beforeAll(async () => {
    const image = await testImage();
    dataDir = await fs.mkdtemp(path.join(os.tmpdir(), "ldl-"));
    const provider = qemuProvider({ dataDir, image, log, bootTimeoutMs: 600_000 });
    opened = await qemuLabMachines(provider, ["controlplane", "node01", "node02"], (line) => console.log(line));
  }, IMAGE_BUILD_TIMEOUT_MS + 600_000);

  afterAll(async () => {
    pool.closeAll();
    await opened?.close();
    if (dataDir) await fs.rm(dataDir, { recursive: true, force: true });
  }, 120_000);

  it("every step fails before its solution and passes after it; swap and sysctl also after a real reboot", async () => {
    const lab = await loadLab(path.resolve("labs"), "preinstall-checks");
    const rebootSteps = lab.steps.filter((s) => s.verifyByReboot).map((s) => s.id);
    expect(rebootSteps).toEqual(expect.arrayContaining(["swap-off", "sysctl"]));

    const results = await testLab(lab, opened!.machines, pool, (r) => console.log(`${r.ok ? "ok  " : "FAIL"} ${r.stepId}${r.problem ? `: ${r.problem}` : ""}`));
    console.log(formatResults(lab, results));
    expect(results.map((r) => [r.stepId, r.problem ?? "ok"])).toEqual(lab.steps.map((s) => [s.id, "ok"]));
    for (const id of rebootSteps) expect(results.find((r) => r.stepId === id)?.afterReboot?.outcome).toBe("pass");
  }, LAB_TEST_TIMEOUT_MS);
});
