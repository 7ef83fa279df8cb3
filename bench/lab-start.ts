/**
 * Lab start benchmark, local QEMU provider under the host's accelerator (TCG here): for
 * one lab, in the same run, how long a learner waits from the hand-out to three SSH-ready machines
 * with the lab set up, by each path —
 *   cold      three VMs booted for the session, then the lab's setup (no pool)
 *   pool      a booted generic pool set, then the lab's setup (the path before prepared sets)
 *   prepared  a set the pool prepared for the lab (setup done, state saved): nothing to run
 * — and, on those sessions: a reset of one machine from the saved lab start against a reset to a
 * fresh disk plus the setup (the cold session has no saved state), a suspend that saves the
 * machines' state and the resume from it against a cold boot, the memory a prepared set holds and
 * how many fit in this host. Needs root and the host tools (scripts/install-deps.sh).
 *
 *   npx tsx bench/lab-start.ts [--lab preinstall-checks] [--image-dir DIR] [--json out.json]
 */
import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import pino from "pino";
import { z } from "zod";
import { loadLab } from "../server/labs/load";
import { runLabSetup } from "../server/labs/setup";
import { labVersionHash } from "../server/labs/versions";
import type { ProvisionedMachine } from "../server/machines/provider";
import { HOST_RESERVE_MIB, memAvailableMiB } from "../server/machines/qemu/capacity";
import { buildImage } from "../server/machines/qemu/image";
import { residentKiB } from "../server/machines/qemu/processes";
import { qemuProvider } from "../server/machines/qemu/provider";
import { TEST_IMAGE_CACHE_DIR } from "../server/machines/qemu/test-image";
import { SshExecPool } from "../server/ssh/exec";
import { WarmPool } from "../server/machines/warm-pool";
import { benchFlags } from "./lib/flags";

const Flags = z.strictObject({
  lab: z
    .string()
    .regex(/^[a-z0-9-]+$/)
    .default("preinstall-checks"),
  "image-dir": z.string().min(1).default(TEST_IMAGE_CACHE_DIR),
  json: z.string().min(1).optional(),
});
const opts = benchFlags(Flags, "usage: npx tsx bench/lab-start.ts [--lab SLUG] [--image-dir DIR] [--json FILE]");
const log = pino({ level: "warn" }, pino.destination(2));
const seconds = (ms: number) => (ms / 1000).toFixed(1);
/** One short command's limit, s. */
const COMMAND_TIMEOUT_S = 30;
/** How long a pool gets to make one set (boot + setup under TCG on a shared host), ms. */
const FILL_TIMEOUT_MS = 900_000;

const exec = new SshExecPool();
const lab = await loadLab(path.resolve("labs"), opts.lab);
const version = labVersionHash(lab);
const image = await buildImage({
  dataDir: opts["image-dir"],
  onProgress: (p) => (p.phase === "done" ? undefined : process.stderr.write(`\rimage: ${p.percent}% ${p.phase}      `)),
});
const dataDir = await fs.mkdtemp(path.join(os.tmpdir(), "ldl-"));
const provider = qemuProvider({ dataDir, image, log, bootTimeoutMs: 600_000 });
const memTotalMiB = Math.floor(os.totalmem() / 1024 / 1024);

/** Every machine answers a command over SSH (a login each, as the terminals do). */
async function answer(machines: readonly ProvisionedMachine[]): Promise<void> {
  await Promise.all(
    machines.map(async (m) => {
      const r = await exec.run(m, "hostname", COMMAND_TIMEOUT_S);
      if (r.outcome !== "pass" || r.output.trim() !== m.name) throw new Error(`${m.name}: ${r.outcome} ${r.output}`);
    }),
  );
}

const setUp = (machines: readonly ProvisionedMachine[]) => {
  const byName = new Map(machines.map((m) => [m.name, m]));
  return runLabSetup(exec, lab, async (name) => byName.get(name) ?? null);
};

async function residentMiBOf(sessionDir: string): Promise<number> {
  let total = 0;
  for (const name of lab.manifest.machines) {
    const pid = Number((await fs.readFile(path.join(sessionDir, `vm-${name}`, "qemu.pid"), "utf8")).trim());
    total += ((await residentKiB(pid)) ?? 0) / 1024;
  }
  return Math.round(total);
}

async function diskMiBOf(sessionDir: string): Promise<number> {
  let total = 0;
  for (const name of lab.manifest.machines) total += (await fs.stat(path.join(sessionDir, `vm-${name}`, "overlay.qcow2"))).size;
  return Math.round(total / 1024 / 1024);
}

const results: Record<string, number> = {};
try {
  // cold: boot for the session, then the setup.
  let t = Date.now();
  const cold = await provider.create({ sessionId: "cold", labSlug: lab.slug, machines: lab.manifest.machines, image: lab.manifest.image });
  results.coldBootMs = Date.now() - t;
  await setUp(cold);
  await answer(cold);
  results.coldMs = Date.now() - t;

  // pool: a booted generic set handed out, then the setup.
  const generic = new WarmPool(provider, { size: 1, machines: lab.manifest.machines, image: lab.manifest.image, log });
  generic.start();
  await generic.settled();
  t = Date.now();
  const pooled = await generic.create({
    sessionId: "pooled",
    labSlug: lab.slug,
    machines: lab.manifest.machines,
    image: lab.manifest.image,
  });
  await setUp(pooled);
  await answer(pooled);
  results.poolMs = Date.now() - t;
  await generic.stop();

  // prepared: the pool ran the setup and saved the state before anyone asked.
  const prepared = new WarmPool(provider, {
    size: 0,
    machines: lab.manifest.machines,
    image: lab.manifest.image,
    log,
    labs: {
      targets: async () => [{ labSlug: lab.slug, machines: lab.manifest.machines, image: lab.manifest.image, reserve: 1, initial: 1 }],
      preparer: {
        version: async () => version,
        prepare: async (_slug, machines) => {
          await setUp(machines);
          await provider.markLabStart(machines[0]!.providerRef.split("/")[0]!, machines);
          return version;
        },
      },
    },
  });
  t = Date.now();
  prepared.start();
  for (const deadline = Date.now() + FILL_TIMEOUT_MS; prepared.status().labs?.[0]?.ready !== 1;) {
    if (Date.now() > deadline) throw new Error(`no prepared set in ${FILL_TIMEOUT_MS} ms: ${prepared.status().lastError}`);
    await new Promise((r) => setTimeout(r, 500));
  }
  results.prepareSetMs = Date.now() - t;
  const preparedDir = path.join(
    dataDir,
    "sessions",
    (await provider.list()).find((s) => s.sessionId.startsWith("pool-") && s.phase === "ready")!.sessionId,
  );
  results.preparedSetRssMiB = await residentMiBOf(preparedDir);
  results.preparedSetDiskMiB = await diskMiBOf(preparedDir);
  t = Date.now();
  const ready = (await prepared.takePrepared({
    sessionId: "learner",
    labSlug: lab.slug,
    machines: lab.manifest.machines,
    labVersion: version,
  }))!.machines;
  await answer(ready);
  results.preparedMs = Date.now() - t;
  await prepared.stop(); // no refill behind it: the rest is measured on a quiet host
  const readyId = ready[0]!.providerRef.split("/")[0]!;

  // Reset of the first machine: from the saved lab start, against a fresh disk + setup (cold has no saved state).
  const first = lab.manifest.machines[0]!;
  t = Date.now();
  const restored = await provider.reset(
    readyId,
    ready.find((m) => m.name === first)!,
  );
  await answer(ready.filter((m) => m.name === first));
  results.resetSavedMs = Date.now() - t;
  if (!restored.atLabStart) throw new Error("the prepared set's reset did not restore the saved lab start");
  t = Date.now();
  const fresh = await provider.reset(
    "cold",
    cold.find((m) => m.name === first)!,
  );
  if (fresh.atLabStart) throw new Error("the cold session had a saved lab start");
  await runLabSetup(exec, lab, async (name) => cold.find((m) => m.name === name) ?? null, [first]);
  await answer(cold.filter((m) => m.name === first));
  results.resetFreshMs = Date.now() - t;

  // Suspend (save the state, end QEMU) and resume from it.
  t = Date.now();
  await provider.suspend(readyId, ready);
  results.suspendMs = Date.now() - t;
  t = Date.now();
  const resumed = await provider.resume(readyId, ready);
  await answer(resumed);
  results.resumeMs = Date.now() - t;

  const fit = Math.floor((memTotalMiB - HOST_RESERVE_MIB) / Math.max(results.preparedSetRssMiB, 1));
  const rows: [string, string][] = [
    [`cold: boot 3 VMs + ${lab.slug} setup, to 3 SSH-ready`, `${seconds(results.coldMs)} s (boot alone ${seconds(results.coldBootMs)} s)`],
    ["pool: booted set + setup (before this change)", `${seconds(results.poolMs)} s`],
    [
      "prepared: hand-out to 3 SSH-ready (setup done)",
      `${seconds(results.preparedMs)} s  (${((results.preparedMs / results.poolMs) * 100).toFixed(1)}% of pool, ${((results.preparedMs / results.coldMs) * 100).toFixed(1)}% of cold)`,
    ],
    ["making one prepared set (background)", `${seconds(results.prepareSetMs)} s`],
    [`reset ${first}: saved lab start`, `${seconds(results.resetSavedMs)} s`],
    [
      `reset ${first}: fresh disk + setup (before)`,
      `${seconds(results.resetFreshMs)} s  (saved: ${(results.resetFreshMs / results.resetSavedMs).toFixed(1)}x faster)`,
    ],
    ["suspend (3 VMs: state saved, QEMU ended)", `${seconds(results.suspendMs)} s`],
    ["resume from the saved state to 3 SSH-ready", `${seconds(results.resumeMs)} s  (a boot of 3 VMs: ${seconds(results.coldBootMs)} s)`],
    [
      "a prepared set holds",
      `${results.preparedSetRssMiB} MiB resident, ${results.preparedSetDiskMiB} MiB of overlays (with its saved state)`,
    ],
    [`prepared sets that fit in ${(memTotalMiB / 1024).toFixed(0)} GiB (less ${HOST_RESERVE_MIB} MiB reserve)`, `${fit}`],
    ["MemAvailable now", `${await memAvailableMiB()} MiB; load ${os.loadavg()[0]!.toFixed(2)}`],
  ];
  const width = Math.max(...rows.map(([k]) => k.length));
  console.log(`\nLabdeck lab start benchmark: ${lab.slug}, QEMU tcg, image ${image.hash}, ${os.cpus().length} cores`);
  for (const [k, v] of rows) console.log(`  ${k.padEnd(width)}  ${v}`);
  if (opts.json) await fs.writeFile(opts.json, JSON.stringify({ lab: lab.slug, ...results, fit }, null, 2) + "\n");
} finally {
  exec.closeAll();
  for (const s of await provider.list()) await provider.destroy(s.sessionId, []).catch(() => undefined);
  await fs.rm(dataDir, { recursive: true, force: true });
}
