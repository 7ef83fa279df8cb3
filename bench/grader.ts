/**
 * Grader benchmark, one run against one test stack: real sshd hosts, embedded PostgreSQL, the real
 * Grader. Phases: LAT_SESSIONS sessions alone, then with each --sessions count of extra "load"
 * sessions whose check never passes. Each phase has two windows:
 *  1. --seconds of the grader alone: this process's CPU (grader + Prisma + ssh2; nothing else runs
 *     in it meanwhile), RSS, SQL per check, checks/s, per-session interval and check duration
 *     (CheckRun history: run counts per session, mean interval), machine CPU (/proc/stat) and our postgres / sshd (+ checks they reap) CPU.
 *  2. unlock latency, LAT_ROUNDS per latency session: `touch /root/flag-<i>` over SSH returns ->
 *     progress event with that step done on the EventBus. The browser leg (SSE route -> HTTP ->
 *     EventSource) is NOT measured: we time the route's serialisation of the event, and window 1
 *     reports event-loop delay, which any SSE write would wait out.
 *
 *   npx tsx bench/grader.ts [--sessions 100,500] [--seconds 30] [--interval-ms 2000] [--concurrency 16] [--json out.json]
 */
import { readdirSync, readFileSync } from "node:fs";
import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { monitorEventLoopDelay, performance } from "node:perf_hooks";
import { parseArgs } from "node:util";
import pg from "pg";
import { z } from "zod";
import type { Progress } from "../server/grader/progress";

const SUBNET = 78; // third octet of the hosts' 10.213.S.0/24
const MACHINE = "node01"; // every check and flag runs here (hosts are shared by all sessions; /root is per host)
const JITTER = 0.2; // the grader's default interval jitter, fraction
const LAT_SESSIONS = 20; // sessions doing unlock trials side by side, each its own lab and flag file
const LAT_ROUNDS = 2; // unlock trials per latency session and phase (20 x 2 = 40 samples)
const UNLOCK_TIMEOUT_MS = 30_000; // longest wait for one unlock event, ms; a trial past it counts as Infinity
const CMD_TIMEOUT_S = 20; // timeout of the bench's own SSH commands, s
const WARMUP_INTERVALS = 2; // intervals waited after adding sessions (their first checks spread over one)
const SAMPLE_MS = 100; // period of the in-flight / RSS sampler, ms
const DRAIN_MS = 15_000; // longest wait for in-flight checks after stopping the grader, ms
const CLK_TCK = 100; // Linux USER_HZ: ticks per second in /proc/<pid>/stat
const MIB = 1024 * 1024; // bytes

const Flags = z.object({
  sessions: z.string().regex(/^\d+(,\d+)*$/, "comma-separated counts").default("100,500").transform((s) => s.split(",").map(Number)),
  seconds: z.coerce.number().positive().max(3600).default(30),
  "interval-ms": z.coerce.number().int().min(100).max(600_000).default(2_000),
  concurrency: z.coerce.number().int().min(1).max(1000).default(16),
  json: z.string().min(1).optional(),
});
function flags(): z.infer<typeof Flags> {
  const usage = "usage: npx tsx bench/grader.ts [--sessions 100,500] [--seconds S] [--interval-ms MS] [--concurrency N] [--json FILE]";
  try {
    const str = { type: "string" } as const;
    const { values } = parseArgs({ options: { sessions: str, seconds: str, "interval-ms": str, concurrency: str, json: str }, strict: true, allowPositionals: false });
    const parsed = Flags.safeParse(values);
    if (parsed.success) return parsed.data;
    console.error(parsed.error.issues.map((i) => `--${i.path.join(".")}: ${i.message}`).join("\n") + "\n" + usage);
  } catch (error) {
    console.error(`${(error as Error).message}\n${usage}`);
  }
  process.exit(2);
}

const opts = flags();
const intervalMs = opts["interval-ms"];
process.env.LOG_LEVEL ??= "warn"; // before the logger is imported: keep pino lines out of the table
const { startTestStack } = await import("../server/testing/stack");
const { SshExecPool } = await import("../server/machines/ssh-exec");

/** SQL statements this process sends, by first word (Prisma's pg adapter goes through pg.Client#query). */
const sql: Record<string, number> = {};
const pgQuery = pg.Client.prototype.query as (...args: unknown[]) => unknown;
pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
  const text = typeof args[0] === "string" ? args[0] : ((args[0] as { text?: string } | undefined)?.text ?? "");
  const verb = /^\s*(\w+)/.exec(text)?.[1]?.toUpperCase() ?? "?";
  sql[verb] = (sql[verb] ?? 0) + 1;
  return pgQuery.apply(this, args);
} as typeof pg.Client.prototype.query;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const r1 = (x: number) => Math.round(x * 10) / 10;
function stats(samples: number[]) {
  const s = [...samples].sort((a, b) => a - b);
  const at = (p: number) => (s.length ? s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)]! : NaN);
  return { n: s.length, p50: r1(at(50)), p95: r1(at(95)), max: r1(s[s.length - 1] ?? NaN) };
}

/** A lab whose steps check for files on MACHINE; `[ -f /root/never ]` never passes. */
async function writeLab(labsDir: string, slug: string, steps: { id: string; file: string }[]) {
  const put = (file: string, text: string, mode = 0o644) =>
    fs.mkdir(path.dirname(path.join(labsDir, slug, file)), { recursive: true }).then(() => fs.writeFile(path.join(labsDir, slug, file), text, { mode }));
  const yaml = steps.map((s) => `  - { id: ${s.id}, title: ${s.id}, machine: ${MACHINE}, timeoutSeconds: 10 }`);
  await put("lab.yaml", ["title: grader bench", "summary: grader benchmark lab", "durationMinutes: 5", "steps:", ...yaml].join("\n"));
  await put("lesson.md", "# bench\n");
  for (const s of steps) {
    for (const [file, text] of [["step.md", `make ${s.file}\n`], ["hint.md", "touch it\n"]] as const) await put(`steps/${s.id}/${file}`, text);
    await put(`steps/${s.id}/check.sh`, `#!/bin/bash\n[ -f ${s.file} ] || { echo "no ${s.file}"; exit 1; }\n`, 0o755);
    await put(`steps/${s.id}/solution.sh`, `#!/bin/bash\ntouch ${s.file}\n`, 0o755);
  }
}

/** Busy and total jiffies of the whole machine. */
function machineTicks() {
  const f = readFileSync("/proc/stat", "utf8").split("\n")[0]!.trim().split(/\s+/).slice(1, 9).map(Number);
  const total = f.reduce((a, b) => a + b, 0);
  return { busy: total - f[3]! - f[4]!, total };
}
/** CPU ticks (own + reaped children) of our descendants: postgres, and sshd (which reaps the checks' bash). */
function groupTicks() {
  const procs = readdirSync("/proc").filter((pid) => /^\d+$/.test(pid)).flatMap((pid) => {
    let s: string;
    try {
      s = readFileSync(`/proc/${pid}/stat`, "utf8");
    } catch {
      return []; // exited meanwhile
    }
    const f = s.slice(s.lastIndexOf(")") + 2).split(" ").map(Number); // f[1] ppid; f[11..14] utime stime cutime cstime
    return [{ pid: Number(pid), ppid: f[1]!, comm: s.slice(s.indexOf("(") + 1, s.lastIndexOf(")")), ticks: f[11]! + f[12]! + f[13]! + f[14]! }];
  });
  const ours = new Set([process.pid]); // other stacks on this machine are not ours
  for (let size = 0; size !== ours.size; ) {
    size = ours.size;
    for (const p of procs) if (ours.has(p.ppid)) ours.add(p.pid);
  }
  const sum = (match: (comm: string) => boolean) => procs.filter((p) => ours.has(p.pid) && match(p.comm)).reduce((t, p) => t + p.ticks, 0);
  return { postgres: sum((c) => c === "postgres"), sshd: sum((c) => c.startsWith("sshd")) };
}

let stack: Awaited<ReturnType<typeof startTestStack>> | undefined;
const running = () => (stack?.grader as unknown as { running: number } | undefined)?.running ?? 0; // the grader's private in-flight count, read only
const actor = new SshExecPool(); // the "learner": its own SSH connection, apart from the grader's
process.once("SIGINT", () => void (stack?.stop() ?? Promise.resolve()).finally(() => process.exit(130)));
process.once("SIGTERM", () => void (stack?.stop() ?? Promise.resolve()).finally(() => process.exit(130)));
let exitCode = 0;
const labsDir = await fs.mkdtemp(path.join(os.tmpdir(), "labdeck-bench-labs-"));
try {
  const [bg0, t0] = [machineTicks(), Date.now()];
  await sleep(2_000);
  const bg1 = machineTicks();
  const backgroundPct = r1(((bg1.busy - bg0.busy) / (bg1.total - bg0.total)) * 100);
  await writeLab(labsDir, "bench-load", [{ id: "never", file: "/root/never" }]);
  for (let i = 0; i < LAT_SESSIONS; i++) await writeLab(labsDir, `bench-lat-${i}`, [{ id: "flag", file: `/root/flag-${i}` }, { id: "never", file: "/root/never" }]);
  stack = await startTestStack({ subnet: SUBNET, labsDir, grader: { intervalMs, jitter: JITTER, concurrency: opts.concurrency } });
  const { db, bus, grader } = stack;
  const host = stack.hosts.hosts.find((h) => h.name === MACHINE)!;
  const cmd = async (script: string) => {
    const r = await actor.run(host, script, CMD_TIMEOUT_S);
    if (r.outcome !== "pass") throw new Error(`${script}: ${r.outcome} ${r.output}`);
  };
  const lat: string[] = [];
  for (let i = 0; i < LAT_SESSIONS; i++) lat.push(await stack.startSession(`lat-${i}`, `bench-lat-${i}`));
  const template = await db.machine.findMany({ where: { sessionId: lat[0]! } });
  console.error(`stack up in ${Date.now() - t0} ms; machine ${backgroundPct}% busy before start`);
  grader.start();

  const encoder = new TextEncoder();
  /** One unlock: rewind session i to step 0 without its flag, wait a random phase, make the flag, time the event. */
  async function trial(i: number, sid: string, encodeUs: number[]): Promise<number> {
    await cmd(`rm -f /root/flag-${i}`);
    // A bench-only rewind (the grader only moves forward), forgetting the step's completion.
    await db.$transaction([db.stepCompletion.deleteMany({ where: { sessionId: sid } }), db.labSession.update({ where: { id: sid }, data: { currentStep: 0 } })]);
    const resetAt = Date.now();
    await sleep(Math.random() * intervalMs);
    let doneAt = Infinity;
    let off = () => {};
    const unlocked = new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, UNLOCK_TIMEOUT_MS);
      off = bus.onProgress(sid, (p: Progress) => {
        if (p.steps[0]?.state !== "done" || !p.lastCheck || Date.parse(p.lastCheck.at) < resetAt) return;
        doneAt = performance.now();
        encoder.encode(`event: progress\ndata: ${JSON.stringify(p)}\n\n`); // what the SSE route does with it
        encodeUs.push((performance.now() - doneAt) * 1000);
        clearTimeout(timer);
        resolve();
      });
    });
    await cmd(`touch /root/flag-${i}`);
    const stateTrue = performance.now();
    await unlocked.finally(() => off());
    return doneAt - stateTrue; // may be slightly negative: a check can see the file before our command's reply arrives
  }

  const loadIds: string[] = [];
  async function phase(n: number) {
    // Load sessions: rows copying a real session's machines (same endpoints), ready, on a step that never passes.
    const add = Array.from({ length: Math.max(0, n - loadIds.length) }, (_, k) => `load-${loadIds.length + k}`);
    await db.labSession.createMany({ data: add.map((id) => ({ id, labSlug: "bench-load", learnerId: id, provider: "static", state: "ready" as const })) });
    await db.machine.createMany({ data: add.flatMap((sessionId) => template.map(({ id: _i, sessionId: _s, createdAt: _c, ...m }) => ({ ...m, sessionId }))) });
    loadIds.push(...add);
    await sleep(WARMUP_INTERVALS * intervalMs);
    console.error(`phase ${n}+${LAT_SESSIONS} sessions: ${opts.seconds} s of polling alone, then ${LAT_ROUNDS} unlocks per latency session`);

    // Window 1: the grader alone.
    let inflight = 0, atCap = 0, samples = 0, rssMax = 0;
    const sampler = setInterval(() => {
      samples++;
      inflight += running();
      if (running() >= opts.concurrency) atCap++;
      rssMax = Math.max(rssMax, process.memoryUsage().rss);
    }, SAMPLE_MS);
    const loop = monitorEventLoopDelay({ resolution: 10 });
    loop.enable();
    // History rows count their runs (server/grader/history.ts): runs in the window are count deltas.
    const runCounts = async () => new Map((await db.checkRun.groupBy({ by: ["sessionId", "outcome"], _sum: { count: true } })).map((g) => [`${g.sessionId}|${g.outcome}`, g._sum.count ?? 0]));
    const counts0 = await runCounts();
    const [sql0, wall0, cpu0, m0, g0, at0] = [{ ...sql }, performance.now(), process.cpuUsage(), machineTicks(), groupTicks(), new Date()];
    await sleep(opts.seconds * 1000);
    const [wall1, cpu1, m1, g1, at1] = [performance.now(), process.cpuUsage(cpu0), machineTicks(), groupTicks(), new Date()];
    const sqlDelta = Object.entries(sql).map(([verb, c]) => [verb, c - (sql0[verb] ?? 0)] as const).filter(([, c]) => c > 0);
    const counts1 = await runCounts();
    loop.disable();
    clearInterval(sampler);

    // Window 2: unlock trials under the same load.
    const unlock: number[] = [];
    const encodeUs: number[] = [];
    await Promise.all(lat.map(async (sid, i) => {
      for (let r = 0; r < LAT_ROUNDS; r++) unlock.push(await trial(i, sid, encodeUs));
    }));

    const perSession = new Map<string, number>();
    const outcomes: Record<string, number> = {};
    for (const [key, c] of counts1) {
      const [sid, outcome] = key.split("|") as [string, string];
      const delta = c - (counts0.get(key) ?? 0);
      if (delta <= 0) continue;
      perSession.set(sid, (perSession.get(sid) ?? 0) + delta);
      outcomes[outcome] = (outcomes[outcome] ?? 0) + delta;
    }
    const runTotal = [...perSession.values()].reduce((a, b) => a + b, 0);
    const polled = new Set(n ? loadIds.slice(0, n) : lat); // load sessions, or the latency sessions when alone
    // Mean time between two checks of one session over window 1 (rows keep counts, not each run's time).
    const intervals = [...polled].filter((id) => perSession.has(id)).map((id) => (wall1 - wall0) / perSession.get(id)!);
    // Each history row keeps its newest run's duration: those touched in the window.
    const touched = await db.checkRun.findMany({ where: { lastAt: { gte: at0, lt: at1 } }, select: { durationMs: true } });
    const seconds = (wall1 - wall0) / 1000;
    const pctOfCore = (ticks: number) => (ticks / CLK_TCK / seconds) * 100;
    const [proc, postgres, sshd] = [((cpu1.user + cpu1.system) / 1000 / (wall1 - wall0)) * 100, pctOfCore(g1.postgres - g0.postgres), pctOfCore(g1.sshd - g0.sshd)];
    const machine = ((m1.busy - m0.busy) / (m1.total - m0.total)) * 100;
    // The rest: other tenants of this machine, kernel work (veth, fork), not yet reaped check processes.
    const rest = machine * os.cpus().length - proc - postgres - sshd;
    const perCheck = (x: number) => (runTotal ? r1(x / runTotal) : null);
    return {
      loadSessions: n,
      latencySessions: LAT_SESSIONS,
      windowS: r1(seconds),
      unlockMs: stats(unlock),
      unlockTimeouts: unlock.filter((x) => x === Infinity).length,
      sseEncodeUs: stats(encodeUs),
      eventLoopDelayMs: { p99: r1(loop.percentile(99) / 1e6), max: r1(loop.max / 1e6) },
      checksPerS: r1(runTotal / seconds),
      neededChecksPerS: r1((n + LAT_SESSIONS) / (intervalMs / 1000)),
      intervalMs: stats(intervals),
      sessionsNotChecked: [...polled].filter((id) => !perSession.has(id)).length,
      checkDurationMs: stats(touched.map((r) => r.durationMs)),
      outcomes,
      inFlightAvg: r1(inflight / samples),
      atConcurrencyCapPct: r1((atCap / samples) * 100),
      cpu: { processPctOfCore: r1(proc), postgresPctOfCore: r1(postgres), sshdAndChecksPctOfCore: r1(sshd), restPctOfCore: r1(rest), machinePctOfAllCores: r1(machine) },
      rssMaxMiB: Math.round(rssMax / MIB),
      processCpuMsPerCheck: perCheck((cpu1.user + cpu1.system) / 1000),
      sshdCpuMsPerCheck: perCheck(((g1.sshd - g0.sshd) * 1000) / CLK_TCK),
      sqlPerCheck: Object.fromEntries(sqlDelta.map(([verb, c]) => [verb, runTotal ? Math.round((c / runTotal) * 100) / 100 : null])),
    };
  }
  const phases: Awaited<ReturnType<typeof phase>>[] = [];
  for (const n of [0, ...opts.sessions]) {
    phases.push(await phase(n));
    console.error(JSON.stringify(phases.at(-1))); // kept should a later phase fail
  }

  const result = { flags: { ...opts, jitter: JITTER }, backgroundMachineCpuPct: backgroundPct, phases };
  const rows: [string, (p: (typeof phases)[number]) => string | number | null | undefined][] = [
    ["unlock ms p50/p95/max (n, timeouts)", (p) => `${p.unlockMs.p50}/${p.unlockMs.p95}/${p.unlockMs.max} (${p.unlockMs.n}, ${p.unlockTimeouts})`.replaceAll("Infinity", `>${UNLOCK_TIMEOUT_MS}`)],
    ["event→SSE bytes µs p50/p95", (p) => `${p.sseEncodeUs.p50}/${p.sseEncodeUs.p95}`],
    ["event-loop delay ms p99/max", (p) => `${p.eventLoopDelayMs.p99}/${p.eventLoopDelayMs.max}`],
    ["checks/s achieved (needed)", (p) => `${p.checksPerS} (${p.neededChecksPerS})`],
    ["interval ms p50/p95/max", (p) => `${p.intervalMs.p50}/${p.intervalMs.p95}/${p.intervalMs.max}`],
    ["sessions never checked", (p) => `${p.sessionsNotChecked} of ${p.loadSessions || p.latencySessions}`],
    ["check duration ms p50/p95", (p) => `${p.checkDurationMs.p50}/${p.checkDurationMs.p95}`],
    ["in flight avg (at cap %)", (p) => `${p.inFlightAvg} (${p.atConcurrencyCapPct}%)`],
    ["outcomes", (p) => Object.entries(p.outcomes).map(([k, v]) => `${k}:${v}`).join(" ")],
    ["grader process CPU % one core", (p) => p.cpu.processPctOfCore],
    ["grader process CPU ms per check", (p) => p.processCpuMsPerCheck],
    ["grader process RSS max MiB", (p) => p.rssMaxMiB],
    ["SQL statements per check", (p) => Object.entries(p.sqlPerCheck).map(([verb, c]) => `${verb}:${c}`).join(" ")],
    ["postgres CPU % one core", (p) => p.cpu.postgresPctOfCore],
    ["sshd+checks CPU % one core", (p) => p.cpu.sshdAndChecksPctOfCore],
    ["sshd+checks CPU ms per check", (p) => p.sshdCpuMsPerCheck],
    ["rest of machine CPU % one core", (p) => p.cpu.restPctOfCore],
    ["machine CPU % of all cores", (p) => p.cpu.machinePctOfAllCores],
  ];
  console.log(`\nGrader benchmark: interval ${intervalMs} ms ±${JITTER * 100}%, concurrency ${opts.concurrency}, ${opts.seconds} s windows; ${os.cpus().length} cores, ${backgroundPct}% busy before start`);
  console.log("".padEnd(36) + phases.map((p) => `${p.loadSessions}+${p.latencySessions} sessions`.padStart(26)).join(""));
  for (const [label, f] of rows) console.log(label.padEnd(36) + phases.map((p) => String(f(p) ?? "-").padStart(26)).join(""));
  console.log(JSON.stringify(result));
  if (opts.json) await fs.writeFile(opts.json, JSON.stringify(result, null, 2) + "\n");
} catch (error) {
  console.error(`bench failed: ${(error as Error).stack ?? error}`);
  exitCode = 1;
} finally {
  stack?.grader.stop();
  // Let checks in flight finish before the database goes away (stop() only ends the polling).
  for (let waited = 0; running() > 0 && waited < DRAIN_MS; waited += 50) await sleep(50);
  actor.closeAll();
  await stack?.stop();
  await fs.rm(labsDir, { recursive: true, force: true });
}
process.exit(exitCode);
