/**
 * The holder's keeper on a real VM (QEMU, TCG here) booted from the test image, where systemd runs
 * the holder as a unit: the daemon killed hard (kill -9, not the keeper), the unit stays active and
 * a new daemon gives back the same shell with the output written meanwhile; the keeper's OOM score
 * is lowered, the shells' is not; a kill -9 of the keeper itself still ends the shells.
 * Run: flock /tmp/labdeck-vm.lock npx vitest run --project vm server/holder/keeper.vm.test.ts
 */
import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import pino from "pino";
import type { Client } from "ssh2";
import { afterAll, beforeAll, expect, it } from "vitest";
import type { ProvisionedMachine } from "../machines/provider";
import { qemuProvider, type QemuProvider } from "../machines/qemu/provider";
import { IMAGE_BUILD_TIMEOUT_MS, testImage } from "../machines/qemu/test-image";
import { connectSsh } from "../ssh/connect";
import { exec as execOn, killDaemonAndResume } from "../testing/keeper-scenario";
import { connectHolder, HolderTerminal } from "./client";

/** One VM booting under TCG on a shared 2-core host: 21-27 s quiet, minutes under load. */
const BOOT_TIMEOUT_MS = 300_000;
const SESSION = "test-keeper";
const log = pino({ level: "error" }, pino.destination(2));

let dataDir: string;
let provider: QemuProvider;
let machines: ProvisionedMachine[] = [];
let ssh: Client;

/** Runs a command as root on the VM and resolves with its stdout, trimmed. */
const exec = async (command: string): Promise<string> => (await execOn(ssh, command)).trim();

beforeAll(async () => {
  const image = await testImage();
  dataDir = await fs.mkdtemp(path.join(os.tmpdir(), "ldk-")); // short: unix socket paths stay under 108 bytes
  provider = qemuProvider({ dataDir, image, log, bootTimeoutMs: BOOT_TIMEOUT_MS });
  machines = await provider.create({ sessionId: SESSION, labSlug: "test", machines: ["node01"] });
  ssh = await connectSsh(machines[0]!, 60_000);
}, IMAGE_BUILD_TIMEOUT_MS + BOOT_TIMEOUT_MS);

afterAll(async () => {
  ssh?.end();
  if (provider) await provider.destroy(SESSION, machines).catch(() => undefined);
  if (dataDir) await fs.rm(dataDir, { recursive: true, force: true });
}, 60_000);

it("gives back the same shell after the holder daemon is killed hard", async () => {
  const keeper = await exec("systemctl show -p MainPID --value labdeck-holder");
  expect(await exec(`cat /proc/${keeper}/comm /proc/${keeper}/oom_score_adj`)).toBe("labdeck-keeper\n-900");
  const result = await killDaemonAndResume(ssh, "vmkeep1");
  const load = await exec("cut -d' ' -f1 /proc/loadavg");
  console.log(
    `qemu: kill -9 of the holder daemon -> the same shell answers: ${Math.round(result.msToSameShell)} ms (host load ${os.loadavg()[0]!.toFixed(1)}, guest ${load})`,
  );
  expect(result.after.pid).not.toBe(result.before.pid);
  expect(result.shellParent).toBe("labdeck-keeper");
  // The unit never noticed: the same keeper, still active; the new daemon is its child.
  expect(await exec("systemctl is-active labdeck-holder; systemctl show -p MainPID --value labdeck-holder")).toBe(`active\n${keeper}`);
  expect(await exec(`cat /proc/${result.after.pid}/status | sed -n 's/^PPid:\\s*//p'`)).toBe(keeper);
  // The daemon's OOM score (and so its shells') is not the keeper's.
  expect(await exec(`cat /proc/${result.after.pid}/oom_score_adj`)).toBe("0");
}, 300_000);

it("ends the shells when the keeper itself is killed (systemd stops the unit's cgroup), then restarts the unit", async () => {
  const keeper = await exec("systemctl show -p MainPID --value labdeck-holder");
  const link = await connectHolder(ssh);
  let text = "";
  const term = new HolderTerminal("vmkeep2", { onOutput: (_, d) => (text += d.toString()) });
  await term.attach(link);
  term.write("echo shell-$$\r");
  await expect.poll(() => /shell-(\d+)\r\n/.exec(text)?.[1], { timeout: 60_000 }).toBeDefined();
  const shellPid = /shell-(\d+)\r\n/.exec(text)![1]!;
  await exec(`kill -9 ${keeper}`);
  await expect.poll(() => exec(`test -d /proc/${shellPid} && echo alive || echo gone`), { timeout: 60_000, interval: 500 }).toBe("gone");
  await expect
    .poll(() => exec("systemctl is-active labdeck-holder; systemctl show -p MainPID --value labdeck-holder"), {
      timeout: 60_000,
      interval: 500,
    })
    .toMatch(/^active\n(?!0$)\d+$/);
  expect(await exec("systemctl show -p MainPID --value labdeck-holder")).not.toBe(keeper);
  link.close();
}, 300_000);
