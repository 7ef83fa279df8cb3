/**
 * Machine benchmark (local QEMU provider): a single-VM boot as the baseline, then a cold 3-VM
 * session start measured in the same run, a reboot from inside to SSH, resident memory and idle
 * CPU per VM, how many 3-VM sessions this host could hold by memory and by idle CPU, and the warm
 * pool: a learner's start from a pooled set to three SSH-ready machines, and an idle session's
 * suspend and resume (while the pool refills beside it, as in production).
 * Needs root and the host tools (scripts/install-deps.sh); builds the image on first use.
 *
 *   npx tsx bench/machines.ts [--image-dir /var/cache/labdeck-test-images] [--memory 512] [--idle-seconds 20] [--json out.json]
 */
import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import pino from "pino";
import { z } from "zod";
import type { ProvisionedMachine } from "../server/machines/provider";
import { HOST_RESERVE_MIB, memAvailableMiB } from "../server/machines/qemu/capacity";
import { buildImage } from "../server/machines/qemu/image";
import { residentKiB } from "../server/machines/qemu/processes";
import { qemuProvider } from "../server/machines/qemu/provider";
import { TEST_IMAGE_CACHE_DIR } from "../server/machines/qemu/test-image";
import { WarmPool } from "../server/machines/warm-pool";
import { connectSsh } from "../server/ssh/connect";
import { benchFlags } from "./lib/flags";

const MACHINES = ["controlplane", "node01", "node02"];
/** Login timeout of one benchmark SSH connection, ms. */
const LOGIN_TIMEOUT_MS = 20_000;
/** Longest wait for one short command, ms. */
const COMMAND_TIMEOUT_MS = 15_000;
/** Longest wait for a reboot to come back, ms. */
const REBOOT_TIMEOUT_MS = 300_000;
/** Kernel clock ticks per second for /proc/<pid>/stat times (USER_HZ; 100 on Linux x86). */
const CLOCK_TICKS_PER_SECOND = 100;

const Flags = z.strictObject({
  "image-dir": z.string().min(1).default(TEST_IMAGE_CACHE_DIR),
  memory: z.coerce.number().int().min(256).max(8192).default(512),
  "idle-seconds": z.coerce.number().int().min(1).max(600).default(20),
  json: z.string().min(1).optional(),
});

function flags(): z.infer<typeof Flags> {
  return benchFlags(Flags, "usage: npx tsx bench/machines.ts [--image-dir DIR] [--memory MIB] [--idle-seconds N] [--json FILE]");
}

const opts = flags();
const log = pino({ level: "warn" }, pino.destination(2));
const seconds = (ms: number) => Math.round(ms / 100) / 10;

/**
 * Runs a command over a fresh SSH connection. Bounded: a connection made just before the guest
 * resets is never closed by anyone (slirp keeps the host side open), so without a limit it hangs.
 */
async function exec(m: ProvisionedMachine, command: string): Promise<string> {
  const client = await connectSsh(m, LOGIN_TIMEOUT_MS);
  try {
    return await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`${m.name}: ${command}: no answer in ${COMMAND_TIMEOUT_MS} ms`)), COMMAND_TIMEOUT_MS);
      client.exec(command, (error, stream) => {
        if (error) {
          clearTimeout(timer);
          return reject(error);
        }
        let out = "";
        stream.on("data", (d: Buffer) => (out += d.toString("utf8")));
        stream.on("close", () => {
          clearTimeout(timer);
          resolve(out.trim());
        });
      });
    });
  } finally {
    client.end();
  }
}

/** CPU time (user + system) a process has used, in seconds. */
async function cpuSeconds(pid: number): Promise<number> {
  const stat = await fs.readFile(`/proc/${pid}/stat`, "utf8");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  // After the command: state is field 3, utime field 14, stime field 15 (1-based over the whole line).
  return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS_PER_SECOND;
}

async function qemuPid(dataDir: string, sessionId: string, name: string): Promise<number> {
  return Number((await fs.readFile(path.join(dataDir, "sessions", sessionId, `vm-${name}`, "qemu.pid"), "utf8")).trim());
}

const image = await buildImage({
  dataDir: opts["image-dir"],
  onProgress: (p) => (p.phase === "done" ? undefined : process.stderr.write(`\rimage: ${p.percent}% ${p.phase}      `)),
});
const dataDir = await fs.mkdtemp(path.join(os.tmpdir(), "ldb-"));
const provider = qemuProvider({ dataDir, image, memoryMiB: opts.memory, log, bootTimeoutMs: 600_000 });
const availableAtStart = await memAvailableMiB();

try {
  // Baseline: one VM alone.
  let t = Date.now();
  await provider.create({ sessionId: "bench-one", labSlug: "bench", machines: ["node01"] });
  const singleBootMs = Date.now() - t;
  await provider.destroy("bench-one", []);

  // A cold 3-VM session.
  t = Date.now();
  const session = await provider.create({ sessionId: "bench-three", labSlug: "bench", machines: MACHINES });
  const sessionStartMs = Date.now() - t;
  const pids = await Promise.all(MACHINES.map((name) => qemuPid(dataDir, "bench-three", name)));

  // Idle: resident memory and CPU use of booted, untouched VMs.
  const cpuBefore = await Promise.all(pids.map(cpuSeconds));
  await new Promise((r) => setTimeout(r, opts["idle-seconds"] * 1000));
  const cpuAfter = await Promise.all(pids.map(cpuSeconds));
  const idleCpu = pids.map((_, i) => (cpuAfter[i]! - cpuBefore[i]!) / opts["idle-seconds"]);
  const rssMiB = await Promise.all(pids.map(async (pid) => Math.round(((await residentKiB(pid)) ?? 0) / 1024)));

  // Reboot from inside to SSH.
  const node02 = session.find((m) => m.name === "node02")!;
  const bootId = await exec(node02, "cat /proc/sys/kernel/random/boot_id");
  // Detached and delayed, so the command's own SSH channel closes before the guest goes down.
  t = Date.now();
  await exec(node02, "nohup sh -c 'sleep 1; systemctl reboot' >/dev/null 2>&1 &");
  for (;;) {
    const id = await exec(node02, "cat /proc/sys/kernel/random/boot_id").catch(() => bootId);
    if (id !== bootId) break;
    if (Date.now() - t > REBOOT_TIMEOUT_MS) throw new Error("node02 did not come back from its reboot");
    await new Promise((r) => setTimeout(r, 500));
  }
  const rebootMs = Date.now() - t;
  const rssAfterRebootMiB = Math.round(((await residentKiB(pids[2]!)) ?? 0) / 1024);
  await provider.destroy("bench-three", []);

  // Warm pool: fill it (a cold start in the background), then a learner's start from it.
  const pool = new WarmPool(provider, { size: 1, machines: MACHINES, log });
  t = Date.now();
  pool.start();
  await pool.settled();
  const poolFillMs = Date.now() - t;
  t = Date.now();
  const warm = await pool.create({ sessionId: "bench-warm", labSlug: "bench", machines: MACHINES });
  await Promise.all(warm.map((m) => exec(m, "hostname")));
  const warmStartMs = Date.now() - t;
  // Idle suspension and resume of that set, while the pool refills (three more VMs booting).
  t = Date.now();
  await pool.suspend!("bench-warm", warm);
  const suspendMs = Date.now() - t;
  t = Date.now();
  const resumed = await pool.resume!("bench-warm", warm);
  await Promise.all(resumed.map((m) => exec(m, "hostname")));
  const resumeMs = Date.now() - t;
  await pool.destroy("bench-warm", warm);
  await pool.stop({ destroySpares: true });

  const perSessionMiB = rssMiB.reduce((a, b) => a + b, 0);
  const bySessionMemory = Math.floor((availableAtStart - HOST_RESERVE_MIB) / Math.max(perSessionMiB, 1));
  const idlePerSession = idleCpu.reduce((a, b) => a + b, 0);
  const bySessionCpu = Math.floor(os.cpus().length / Math.max(idlePerSession, 0.001));
  const load = os.loadavg()[0]!;

  const rows: [string, string][] = [
    ["single VM, start to SSH (baseline)", `${seconds(singleBootMs)} s`],
    ["3-VM session, cold start to all SSH", `${seconds(sessionStartMs)} s  (${(sessionStartMs / singleBootMs).toFixed(2)}x the single VM)`],
    ["reboot from inside to SSH (node02)", `${seconds(rebootMs)} s`],
    ["warm pool fill (3 VMs, background)", `${seconds(poolFillMs)} s`],
    [
      "warm start: hand-out to 3 SSH-ready machines",
      `${seconds(warmStartMs)} s  (${((warmStartMs / sessionStartMs) * 100).toFixed(1)}% of the cold start)`,
    ],
    ["idle suspend (ACPI shutdown of 3 VMs)", `${seconds(suspendMs)} s`],
    ["resume of 3 VMs to SSH (pool refilling beside)", `${seconds(resumeMs)} s`],
    [`RSS per VM after boot (-m ${opts.memory})`, `${rssMiB.join(", ")} MiB; node02 after its reboot ${rssAfterRebootMiB} MiB`],
    [`idle CPU per VM over ${opts["idle-seconds"]} s`, idleCpu.map((c) => `${(c * 100).toFixed(1)}%`).join(", ") + " of one core"],
    ["MemAvailable at start - reserve", `${availableAtStart} - ${HOST_RESERVE_MIB} MiB`],
    ["sessions this host holds, by memory", `${bySessionMemory} (at ${perSessionMiB} MiB per 3-VM session)`],
    ["sessions this host holds, by idle CPU", `${bySessionCpu} (${os.cpus().length} cores; boots and lab work need far more)`],
    ["host load average (1 min) at the end", `${load.toFixed(2)}`],
  ];
  const width = Math.max(...rows.map(([k]) => k.length));
  console.log(`\nLabdeck machines benchmark: QEMU tcg, -m ${opts.memory}, image ${image.hash}, ${os.cpus().length} cores`);
  for (const [k, v] of rows) console.log(`  ${k.padEnd(width)}  ${v}`);
  if (opts.json) {
    await fs.writeFile(
      opts.json,
      JSON.stringify(
        {
          singleBootMs,
          sessionStartMs,
          rebootMs,
          poolFillMs,
          warmStartMs,
          suspendMs,
          resumeMs,
          rssMiB,
          rssAfterRebootMiB,
          idleCpu,
          availableAtStart,
          bySessionMemory,
          bySessionCpu,
          load,
        },
        null,
        2,
      ) + "\n",
    );
  }
} finally {
  await provider.destroy("bench-one", []).catch(() => undefined);
  await provider.destroy("bench-three", []).catch(() => undefined);
  for (const s of await provider.list()) await provider.destroy(s.sessionId, []).catch(() => undefined);
  await fs.rm(dataDir, { recursive: true, force: true });
}
