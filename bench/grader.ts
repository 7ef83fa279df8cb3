/**
 * Grader benchmark, one run against one test stack: real sshd hosts, embedded PostgreSQL, the real
 * Grader. Phases: LAT_SESSIONS sessions alone, then with each --sessions count of extra "load"
 * sessions whose check never passes. Each phase has two windows:
 *  1. --seconds of the grader alone: this process's CPU (grader + Prisma + ssh2; nothing else runs
 *     in it meanwhile), RSS, SQL per check, checks/s, per-session interval and check duration
 *     (CheckRun history: run counts per session, mean interval), machine CPU (/proc/stat) and our postgres / sshd (+ checks they reap) CPU.
 *  2. unlock latency, LAT_ROUNDS per latency session: `touch /root/flag-<i>` over SSH returns ->
 *     progress event with that step done on the EventBus; polled (the baseline), then as many
 *     nudged: the grader is nudged right after the touch, as the terminal gateway does on the
 *     learner's Enter (its check follows NUDGE_DELAY_MS later, before the next poll). The browser
 *     leg (SSE route -> HTTP -> EventSource) is NOT measured: we time the route's serialisation of
 *     the event, and window 1 reports event-loop delay, which any SSE write would wait out.
 * Duplicate runs (two runs of one session overlapping: history rows with a negative minGapMs) are
 * counted in every phase.
 *
 * --processes N (N >= 2): the graders run in N child processes (bench/grader-child.ts), each a
 * real Grader over the stack's database, as N server processes would; this process keeps the
 * stack, the sessions and the unlock measurement (the children's progress events arrive over
 * LISTEN/NOTIFY). Every phase is measured twice, first with one child grading (the baseline)
 * and then with all N; CPU is the children's own (process.cpuUsage). Then a takeover phase:
 * kill -9 one child and time how long until a survivor checks the sessions it checked last (those
 * whose check it was running wait out the claim lease, claims.ts).
 *
 *   npx tsx bench/grader.ts [--sessions 100,500] [--seconds 30] [--interval-ms 2000] [--concurrency 16] [--processes 1] [--json out.json]
 *
 * Measured 2026-12-01 (2 cores shared with other runs; --sessions 300,1000 --seconds 15 --processes 2,
 * concurrency 16). Grader CPU per check (the children's own), before -> after batch claims
 * (claims.ts) and the poll's record + release in one statement (history.ts):
 *   1,000 sessions: 1 process 5.3 -> 2.1 ms, 2 processes 9.6 -> 2.2 ms (~950 sessions per grader core;
 *   target 500); 300 sessions: 1 process 6.8 -> 2.1 ms (before: in-process, bench/grader.ts alone).
 * The box cannot run 1,000 sessions at 2 s: sshd + the checks' bash cost ~10 ms CPU per check on the
 * same 2 cores (the machines' side, not the grader's), so at 300 and 1,000 sessions the machine is
 * 95-100 % busy: 134 / 137 checks/s at 300 (1p / 2p, 160 needed), 122 / 111 at 1,000 (510 needed;
 * before 104 / 82). Unlock p95: 2.2 s with 20 sessions (the floor of a 2 s ± 20 % poll without
 * nudges), 2.6 / 3.1 s at 300, 9.0 / 10.7 s at 1,000 (before 11.8 / 13.0). Duplicate runs 0.
 * Takeover after kill -9 (1,000 sessions): p50 4.9 s, max 11.5 s (before 4.5 / 25.2); its 12 held
 * claims re-checked after 9.9-10.1 s (lease 10 s, was step timeout + 15 s = 25 s).
 * Nudged beside polled unlocks, 2026-12-05 (--sessions 10 --seconds 3, the machine 100 % busy with
 * other runs before the start): p50 1.5 s vs 2.3 s polled with 20 sessions, 1.8 vs 2.1 s at 10+20.
 */
import { fork, type ChildProcess } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { monitorEventLoopDelay, performance } from "node:perf_hooks";
import { fileURLToPath } from "node:url";
import pg from "pg";
import { z } from "zod";
import type { Progress } from "../server/grader/progress";
import { benchFlags } from "./lib/flags";

const SUBNET = 97; // third octet of the hosts' 10.213.S.0/24
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
const STEP_TIMEOUT_S = 10; // every bench step's timeoutSeconds (writeLab)
const CHILD_READY_MS = 60_000; // longest wait for a grader child to start, ms
const CHILD_REPLY_MS = 15_000; // longest wait for a grader child's reply to a command, ms
const TAKEOVER_MS = 90_000; // longest wait for the survivors to check every session of the killed child, ms
const TAKEOVER_POLL_MS = 250; // how often the survivors are asked, ms

const Flags = z.object({
  sessions: z
    .string()
    .regex(/^\d+(,\d+)*$/, "comma-separated counts")
    .default("100,500")
    .transform((s) => s.split(",").map(Number)),
  seconds: z.coerce.number().positive().max(3600).default(30),
  "interval-ms": z.coerce.number().int().min(100).max(600_000).default(2_000),
  concurrency: z.coerce.number().int().min(1).max(1000).default(16),
  processes: z.coerce.number().int().min(1).max(8).default(1),
  json: z.string().min(1).optional(),
});
function flags(): z.infer<typeof Flags> {
  return benchFlags(
    Flags,
    "usage: npx tsx bench/grader.ts [--sessions 100,500] [--seconds S] [--interval-ms MS] [--concurrency N] [--processes N] [--json FILE]",
  );
}

const opts = flags();
const intervalMs = opts["interval-ms"];
process.env.LOG_LEVEL ??= "warn"; // before the logger is imported: keep pino lines out of the table
const { startTestStack } = await import("../server/testing/stack");
const { SshExecPool } = await import("../server/ssh/exec");
const { CHECK_LEASE_S } = await import("../server/grader/claims");

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
    fs
      .mkdir(path.dirname(path.join(labsDir, slug, file)), { recursive: true })
      .then(() => fs.writeFile(path.join(labsDir, slug, file), text, { mode }));
  const yaml = steps.map((s) => `  - { id: ${s.id}, title: ${s.id}, machine: ${MACHINE}, timeoutSeconds: ${STEP_TIMEOUT_S} }`);
  await put("lab.yaml", ["title: grader bench", "summary: grader benchmark lab", "durationMinutes: 5", "steps:", ...yaml].join("\n"));
  await put("lesson.md", "# bench\n");
  for (const s of steps) {
    for (const [file, text] of [
      ["step.md", `make ${s.file}\n`],
      ["hint.md", "touch it\n"],
    ] as const)
      await put(`steps/${s.id}/${file}`, text);
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
  const procs = readdirSync("/proc")
    .filter((pid) => /^\d+$/.test(pid))
    .flatMap((pid) => {
      let s: string;
      try {
        s = readFileSync(`/proc/${pid}/stat`, "utf8");
      } catch {
        return []; // exited meanwhile
      }
      const f = s
        .slice(s.lastIndexOf(")") + 2)
        .split(" ")
        .map(Number); // f[1] ppid; f[11..14] utime stime cutime cstime
      return [
        { pid: Number(pid), ppid: f[1]!, comm: s.slice(s.indexOf("(") + 1, s.lastIndexOf(")")), ticks: f[11]! + f[12]! + f[13]! + f[14]! },
      ];
    });
  const ours = new Set([process.pid]); // other stacks on this machine are not ours
  for (let size = 0; size !== ours.size;) {
    size = ours.size;
    for (const p of procs) if (ours.has(p.ppid)) ours.add(p.pid);
  }
  const sum = (match: (comm: string) => boolean) => procs.filter((p) => ours.has(p.pid) && match(p.comm)).reduce((t, p) => t + p.ticks, 0);
  return { postgres: sum((c) => c === "postgres"), sshd: sum((c) => c.startsWith("sshd")) };
}

/** What a grader child reports (bench/grader-child.ts): cumulative since it started. */
interface ChildStats {
  cpuUs: number;
  checks: number;
  inFlight: number;
  rss: number;
  /** Per session, Date.now() of this child's newest check start. */
  lastStart: Record<string, number>;
  /** Per watched session, its first check start on this child at or after the watch's `since`. */
  firstSince: Record<string, number>;
}
interface Child {
  proc: ChildProcess;
  ask(cmd: "start" | "stop" | "watch" | "nudge", extra?: { sessions: string[]; since?: number }): Promise<void>;
  stats(): Promise<ChildStats>;
}
const CHILD_SCRIPT = path.join(path.dirname(fileURLToPath(import.meta.url)), "grader-child.ts");
/** Forks one grader child over the stack's database; resolves once it is ready (not yet grading). */
async function startChild(databaseUrl: string, secret: Buffer, labsDir: string): Promise<Child> {
  const proc = fork(CHILD_SCRIPT, [labsDir, String(intervalMs), String(JITTER), String(opts.concurrency)], {
    execArgv: ["--import", "tsx"],
    env: { ...process.env, DATABASE_URL: databaseUrl, BENCH_SECRET_HEX: secret.toString("hex") },
    stdio: ["ignore", "inherit", "inherit", "ipc"],
  });
  let next = 0;
  const waiting = new Map<number, { resolve: (m: unknown) => void; reject: (e: Error) => void }>();
  proc.on("message", (m: { id?: number }) => {
    if (m.id === undefined) return;
    waiting.get(m.id)?.resolve(m);
    waiting.delete(m.id);
  });
  proc.once("exit", (code, signal) => {
    for (const w of waiting.values()) w.reject(new Error(`grader child ${proc.pid} exited (${signal ?? code})`));
    waiting.clear();
  });
  const request = (body: object) =>
    new Promise<unknown>((resolve, reject) => {
      const id = next++;
      const timer = setTimeout(() => reject(new Error(`grader child ${proc.pid}: no reply in ${CHILD_REPLY_MS} ms`)), CHILD_REPLY_MS);
      const done =
        <T>(fn: (x: T) => void) =>
        (x: T) => (clearTimeout(timer), fn(x));
      waiting.set(id, { resolve: done(resolve), reject: done(reject) });
      proc.send({ id, ...body });
    });
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`grader child not ready in ${CHILD_READY_MS} ms`)), CHILD_READY_MS);
    proc.once("exit", (code) => (clearTimeout(timer), reject(new Error(`grader child exited before ready (${code})`))));
    proc.on("message", (m: { ready?: boolean }) => m.ready && (clearTimeout(timer), resolve()));
  });
  return {
    proc,
    ask: async (cmd, extra) => void (await request({ cmd, ...extra })),
    stats: async () => (await request({ cmd: "stats" })) as ChildStats,
  };
}
const children: Child[] = [];
const alive = () => children.filter((c) => c.proc.exitCode === null && c.proc.signalCode === null);

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
  for (let i = 0; i < LAT_SESSIONS; i++)
    await writeLab(labsDir, `bench-lat-${i}`, [
      { id: "flag", file: `/root/flag-${i}` },
      { id: "never", file: "/root/never" },
    ]);
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
  const multi = opts.processes > 1;
  if (multi) for (let i = 0; i < opts.processes; i++) children.push(await startChild(stack.databaseUrl, stack.secret, labsDir));
  else grader.start();
  console.error(
    `stack up in ${Date.now() - t0} ms${multi ? ` with ${opts.processes} grader processes` : ""}; machine ${backgroundPct}% busy before start`,
  );

  const encoder = new TextEncoder();
  /** The grader that checks `sid` on a nudge: this process's, or (--processes) the first child's, as the gateway's own process would. */
  const nudge = (sid: string) => (multi ? children[0]!.ask("nudge", { sessions: [sid] }) : grader.nudge(sid));

  /**
   * One unlock: rewind session i to step 0 without its flag, wait a random phase, make the flag
   * (and with `nudged`, nudge the grader as the learner's Enter does), time the event.
   */
  async function trial(i: number, sid: string, encodeUs: number[], nudged = false): Promise<number> {
    await cmd(`rm -f /root/flag-${i}`);
    // A bench-only rewind (the grader only moves forward), forgetting the step's completion.
    await db.$transaction([
      db.stepCompletion.deleteMany({ where: { sessionId: sid } }),
      db.labSession.update({ where: { id: sid }, data: { currentStepId: "flag", completedAt: null } }),
    ]);
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
    if (nudged) await nudge(sid);
    await unlocked.finally(() => off());
    return doneAt - stateTrue; // may be slightly negative: a check can see the file before our command's reply arrives
  }

  const loadIds: string[] = [];
  /** Rows of CheckRun whose runs overlapped (negative smallest gap), and the smallest gap of all, ms. */
  const duplicates = async () => ({
    rows: await db.checkRun.count({ where: { minGapMs: { lt: 0 } } }),
    minGapMs: (await db.checkRun.aggregate({ _min: { minGapMs: true } }))._min.minGapMs,
  });

  /** One phase: n load sessions (+ the latency ones); in --processes mode, `procs` of the children grade. */
  async function phase(n: number, procs: number) {
    // Load sessions: rows copying a real session's machines (same endpoints), ready, on a step that never passes.
    const add = Array.from({ length: Math.max(0, n - loadIds.length) }, (_, k) => `load-${loadIds.length + k}`);
    await db.labSession.createMany({
      data: add.map((id) => ({ id, labSlug: "bench-load", learnerId: id, provider: "static", state: "ready" as const })),
    });
    await db.machine.createMany({
      data: add.flatMap((sessionId) => template.map(({ id: _i, sessionId: _s, createdAt: _c, ...m }) => ({ ...m, sessionId }))),
    });
    loadIds.push(...add);
    const active = children.slice(0, procs);
    for (const [i, c] of children.entries()) await c.ask(i < procs ? "start" : "stop");
    const dup0 = await duplicates();
    await sleep(WARMUP_INTERVALS * intervalMs);
    console.error(
      `phase ${n}+${LAT_SESSIONS} sessions${multi ? `, ${procs} grader process(es)` : ""}: ${opts.seconds} s of polling alone, then ${LAT_ROUNDS} polled and ${LAT_ROUNDS} nudged unlocks per latency session`,
    );

    // Window 1: the grader alone.
    let inflight = 0,
      atCap = 0,
      samples = 0,
      rssMax = 0;
    const sampler = setInterval(() => {
      samples++;
      inflight += running();
      if (running() >= opts.concurrency) atCap++;
      rssMax = Math.max(rssMax, process.memoryUsage().rss);
    }, SAMPLE_MS);
    const loop = monitorEventLoopDelay({ resolution: 10 });
    loop.enable();
    // History rows count their runs (server/grader/history.ts): runs in the window are count deltas.
    const runCounts = async () =>
      new Map(
        (await db.checkRun.groupBy({ by: ["sessionId", "outcome"], _sum: { count: true } })).map((g) => [
          `${g.sessionId}|${g.outcome}`,
          g._sum.count ?? 0,
        ]),
      );
    // History counts and the children's own counts read side by side, so both windows match.
    const [counts0, c0] = await Promise.all([runCounts(), Promise.all(active.map((c) => c.stats()))]);
    const [sql0, wall0, cpu0, m0, g0, at0] = [{ ...sql }, performance.now(), process.cpuUsage(), machineTicks(), groupTicks(), new Date()];
    await sleep(opts.seconds * 1000);
    const [wall1, cpu1, m1, g1, at1] = [performance.now(), process.cpuUsage(cpu0), machineTicks(), groupTicks(), new Date()];
    const sqlDelta = Object.entries(sql)
      .map(([verb, c]) => [verb, c - (sql0[verb] ?? 0)] as const)
      .filter(([, c]) => c > 0);
    const [counts1, c1] = await Promise.all([runCounts(), Promise.all(active.map((c) => c.stats()))]);
    loop.disable();
    clearInterval(sampler);

    // Window 2: unlock trials under the same load, polled (the baseline) and nudged.
    const unlock: number[] = [];
    const unlockNudged: number[] = [];
    const encodeUs: number[] = [];
    await Promise.all(
      lat.map(async (sid, i) => {
        for (let r = 0; r < LAT_ROUNDS; r++) unlock.push(await trial(i, sid, encodeUs));
        for (let r = 0; r < LAT_ROUNDS; r++) unlockNudged.push(await trial(i, sid, encodeUs, true));
      }),
    );
    const dup1 = await duplicates();

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
    // The graders' CPU: this process's in-process mode, else the children's sum (this process then only seeds and times unlocks).
    const benchMs = (cpu1.user + cpu1.system) / 1000;
    const childChecks = c1.map((c, i) => c.checks - c0[i]!.checks);
    const childMs = c1.map((c, i) => (c.cpuUs - c0[i]!.cpuUs) / 1000);
    const graderMs = multi ? childMs.reduce((a, b) => a + b, 0) : benchMs;
    const [proc, postgres, sshd] = [(graderMs / (wall1 - wall0)) * 100, pctOfCore(g1.postgres - g0.postgres), pctOfCore(g1.sshd - g0.sshd)];
    const machine = ((m1.busy - m0.busy) / (m1.total - m0.total)) * 100;
    // The rest: other tenants of this machine, kernel work (veth, fork), not yet reaped check processes.
    const rest = machine * os.cpus().length - proc - (multi ? (benchMs / (wall1 - wall0)) * 100 : 0) - postgres - sshd;
    const perCheck = (x: number) => (runTotal ? r1(x / runTotal) : null);
    const graderMsPerCheck = runTotal ? graderMs / runTotal : null;
    return {
      loadSessions: n,
      latencySessions: LAT_SESSIONS,
      graderProcesses: multi ? procs : 1,
      windowS: r1(seconds),
      unlockMs: stats(unlock),
      unlockTimeouts: unlock.filter((x) => x === Infinity).length,
      unlockNudgedMs: stats(unlockNudged),
      unlockNudgedTimeouts: unlockNudged.filter((x) => x === Infinity).length,
      sseEncodeUs: stats(encodeUs),
      eventLoopDelayMs: { p99: r1(loop.percentile(99) / 1e6), max: r1(loop.max / 1e6) },
      checksPerS: r1(runTotal / seconds),
      checksPerSByProcess: multi ? childChecks.map((c) => r1(c / seconds)) : [r1(runTotal / seconds)],
      checksByGraders: multi ? childChecks.reduce((a, b) => a + b, 0) : null,
      checksInHistory: runTotal,
      checksNeeded: Math.round(((n + LAT_SESSIONS) * seconds * 1000) / intervalMs),
      // Over the whole phase (warm-up, window, unlock trials): new history rows whose runs overlapped.
      duplicateRows: dup1.rows - dup0.rows,
      duplicateRowsEver: dup1.rows,
      smallestGapEverMs: dup1.minGapMs,
      neededChecksPerS: r1((n + LAT_SESSIONS) / (intervalMs / 1000)),
      intervalMs: stats(intervals),
      sessionsNotChecked: [...polled].filter((id) => !perSession.has(id)).length,
      checkDurationMs: stats(touched.map((r) => r.durationMs)),
      outcomes,
      inFlightAvg: multi ? null : r1(inflight / samples),
      childInFlightAtEnd: multi ? c1.map((c) => c.inFlight) : null,
      atConcurrencyCapPct: r1((atCap / samples) * 100),
      cpu: {
        processPctOfCore: r1(proc),
        postgresPctOfCore: r1(postgres),
        sshdAndChecksPctOfCore: r1(sshd),
        restPctOfCore: r1(rest),
        machinePctOfAllCores: r1(machine),
      },
      rssMaxMiB: multi ? Math.max(...c1.map((c) => Math.round(c.rss / MIB))) : Math.round(rssMax / MIB),
      processCpuMsPerCheck: graderMsPerCheck === null ? null : Math.round(graderMsPerCheck * 100) / 100,
      processCpuMsByProcess: multi
        ? childMs.map((ms, i) => (childChecks[i] ? Math.round((ms / childChecks[i]!) * 100) / 100 : null))
        : null,
      // Sessions one core of grader processes keeps at the interval: interval / CPU per check.
      sessionsPerCore: graderMsPerCheck ? Math.round(intervalMs / graderMsPerCheck) : null,
      benchProcessCpuPctOfCore: multi ? r1((benchMs / (wall1 - wall0)) * 100) : null,
      sshdCpuMsPerCheck: perCheck(((g1.sshd - g0.sshd) * 1000) / CLK_TCK),
      sqlPerCheck: multi
        ? {}
        : Object.fromEntries(sqlDelta.map(([verb, c]) => [verb, runTotal ? Math.round((c / runTotal) * 100) / 100 : null])),
    };
  }
  const phases: Awaited<ReturnType<typeof phase>>[] = [];
  for (const n of [0, ...opts.sessions]) {
    for (const procs of multi ? [1, opts.processes] : [1]) {
      phases.push(await phase(n, procs));
      console.error(JSON.stringify(phases.at(-1))); // kept should a later phase fail
    }
  }

  /**
   * Takeover: with every child grading (the last phase's state), kill -9 the last child and time
   * how long until the survivors check each session it checked last. Those it was not checking
   * are due again within an interval; one whose check it was running waits out that check's
   * claim lease (CHECK_LEASE_S from its last renewal) first.
   */
  async function takeover() {
    const victim = children.at(-1)!;
    const survivors = children.slice(0, -1);
    const all = await Promise.all(children.map((c) => c.stats()));
    const owner = new Map<string, number>();
    all.forEach((st, i) => {
      for (const [sid, at] of Object.entries(st.lastStart))
        if (!owner.has(sid) || at > all[owner.get(sid)!]!.lastStart[sid]!) owner.set(sid, i);
    });
    const theirs = [...owner].filter(([, i]) => i === children.length - 1).map(([sid]) => sid);
    const killAt = Date.now() + 100; // the survivors watch from this instant; the kill follows it
    await Promise.all(survivors.map((c) => c.ask("watch", { sessions: theirs, since: killAt })));
    await sleep(Math.max(0, killAt - Date.now()));
    victim.proc.kill("SIGKILL");
    // Its claims still held: the checks it was running when it died (a survivor may have just claimed one of its sessions, and then runs it at once).
    const leased = new Set(
      (await db.labSession.findMany({ where: { id: { in: theirs }, checkUntil: { gt: new Date() } }, select: { id: true } })).map(
        (s) => s.id,
      ),
    );
    console.error(
      `takeover: killed grader child ${victim.proc.pid} (checked ${theirs.length} sessions last, ${leased.size} claims held); waiting up to ${TAKEOVER_MS / 1000} s`,
    );
    let first = new Map<string, number>();
    while (Date.now() - killAt < TAKEOVER_MS) {
      await sleep(TAKEOVER_POLL_MS);
      first = new Map();
      for (const st of await Promise.all(survivors.map((c) => c.stats())))
        for (const [sid, at] of Object.entries(st.firstSince)) first.set(sid, Math.min(at, first.get(sid) ?? Infinity));
      if (first.size >= theirs.length) break;
    }
    const after = theirs.filter((sid) => first.has(sid)).map((sid) => first.get(sid)! - killAt);
    const afterLeased = [...leased].filter((sid) => first.has(sid)).map((sid) => first.get(sid)! - killAt);
    // Longer than one interval (+ jitter, + a refresh): waited for a lease, not for the due time.
    const dueBound = intervalMs * (1 + JITTER) + 1_000;
    return {
      lastCheckedByProcess: children.map((_, i) => [...owner.values()].filter((o) => o === i).length),
      killedSessions: theirs.length,
      claimsHeldAtKill: leased.size,
      leaseS: CHECK_LEASE_S,
      leasedTakeoverMs: stats(afterLeased),
      firstMs: after.length ? Math.min(...after) : null,
      takeoverMs: stats(after),
      pastOneIntervalCount: after.filter((ms) => ms > dueBound).length,
      notTakenOver: theirs.length - after.length,
      duplicatesAfter: await duplicates(),
    };
  }
  const takeoverResult = multi ? await takeover() : null;

  const result = { flags: { ...opts, jitter: JITTER }, backgroundMachineCpuPct: backgroundPct, phases, takeover: takeoverResult };
  const rows: [string, (p: (typeof phases)[number]) => string | number | null | undefined][] = [
    [
      "unlock ms p50/p95/max (n, timeouts)",
      (p) =>
        `${p.unlockMs.p50}/${p.unlockMs.p95}/${p.unlockMs.max} (${p.unlockMs.n}, ${p.unlockTimeouts})`.replaceAll(
          "Infinity",
          `>${UNLOCK_TIMEOUT_MS}`,
        ),
    ],
    [
      "  nudged: p50/p95/max (n, timeouts)",
      (p) =>
        `${p.unlockNudgedMs.p50}/${p.unlockNudgedMs.p95}/${p.unlockNudgedMs.max} (${p.unlockNudgedMs.n}, ${p.unlockNudgedTimeouts})`.replaceAll(
          "Infinity",
          `>${UNLOCK_TIMEOUT_MS}`,
        ),
    ],
    ["event→SSE bytes µs p50/p95", (p) => `${p.sseEncodeUs.p50}/${p.sseEncodeUs.p95}`],
    ["event-loop delay ms p99/max", (p) => `${p.eventLoopDelayMs.p99}/${p.eventLoopDelayMs.max}`],
    ["checks/s achieved (needed)", (p) => `${p.checksPerS} (${p.neededChecksPerS})`],
    ["checks/s per grader process", (p) => p.checksPerSByProcess.join(" / ")],
    ["runs: history / graders / needed", (p) => `${p.checksInHistory} / ${p.checksByGraders ?? "-"} / ${p.checksNeeded}`],
    ["duplicate rows phase (ever, min gap)", (p) => `${p.duplicateRows} (${p.duplicateRowsEver}, ${p.smallestGapEverMs ?? "-"} ms)`],
    ["interval ms p50/p95/max", (p) => `${p.intervalMs.p50}/${p.intervalMs.p95}/${p.intervalMs.max}`],
    ["sessions never checked", (p) => `${p.sessionsNotChecked} of ${p.loadSessions || p.latencySessions}`],
    ["check duration ms p50/p95", (p) => `${p.checkDurationMs.p50}/${p.checkDurationMs.p95}`],
    [
      "in flight avg (at cap %)",
      (p) => (p.inFlightAvg === null ? `at end ${p.childInFlightAtEnd!.join("/")}` : `${p.inFlightAvg} (${p.atConcurrencyCapPct}%)`),
    ],
    [
      "outcomes",
      (p) =>
        Object.entries(p.outcomes)
          .map(([k, v]) => `${k}:${v}`)
          .join(" "),
    ],
    ["grader process CPU % one core", (p) => p.cpu.processPctOfCore],
    ["grader process CPU ms per check", (p) => p.processCpuMsPerCheck],
    ["  per grader process", (p) => p.processCpuMsByProcess?.map((x) => x ?? "-").join(" / ")],
    ["sessions per grader core implied", (p) => p.sessionsPerCore],
    ["bench process CPU % one core", (p) => p.benchProcessCpuPctOfCore],
    ["grader process RSS max MiB", (p) => p.rssMaxMiB],
    [
      "SQL statements per check",
      (p) =>
        Object.entries(p.sqlPerCheck)
          .map(([verb, c]) => `${verb}:${c}`)
          .join(" "),
    ],
    ["postgres CPU % one core", (p) => p.cpu.postgresPctOfCore],
    ["sshd+checks CPU % one core", (p) => p.cpu.sshdAndChecksPctOfCore],
    ["sshd+checks CPU ms per check", (p) => p.sshdCpuMsPerCheck],
    ["rest of machine CPU % one core", (p) => p.cpu.restPctOfCore],
    ["machine CPU % of all cores", (p) => p.cpu.machinePctOfAllCores],
  ];
  console.log(
    `\nGrader benchmark: interval ${intervalMs} ms ±${JITTER * 100}%, concurrency ${opts.concurrency}, ${opts.seconds} s windows; ${os.cpus().length} cores, ${backgroundPct}% busy before start`,
  );
  console.log(
    "".padEnd(36) +
      phases.map((p) => `${p.loadSessions}+${p.latencySessions} sessions${multi ? ` ${p.graderProcesses}p` : ""}`.padStart(26)).join(""),
  );
  for (const [label, f] of rows) console.log(label.padEnd(36) + phases.map((p) => String(f(p) ?? "-").padStart(26)).join(""));
  if (takeoverResult) {
    const t = takeoverResult;
    console.log(
      `\nTakeover after kill -9 of 1 of ${opts.processes} grader processes (claim lease ${t.leaseS} s, renewed while a check runs):`,
    );
    console.log(
      `  sessions checked last by each process ${t.lastCheckedByProcess.join(" / ")}; by the killed one ${t.killedSessions}; first re-checked after ${t.firstMs ?? "-"} ms`,
    );
    console.log(
      `  kill -> survivor's first check ms p50/p95/max ${t.takeoverMs.p50}/${t.takeoverMs.p95}/${t.takeoverMs.max}; past one interval ${t.pastOneIntervalCount}; never within ${TAKEOVER_MS / 1000} s ${t.notTakenOver}`,
    );
    console.log(
      `  its claims held at kill ${t.claimsHeldAtKill}: re-checked after ms p50/max ${t.leasedTakeoverMs.p50}/${t.leasedTakeoverMs.max} (lease ${t.leaseS * 1000} ms from each claim or renewal)`,
    );
    console.log(`  duplicate rows ever ${t.duplicatesAfter.rows}, smallest gap ever ${t.duplicatesAfter.minGapMs ?? "-"} ms`);
  }
  console.log(JSON.stringify(result));
  if (opts.json) await fs.writeFile(opts.json, JSON.stringify(result, null, 2) + "\n");
} catch (error) {
  console.error(`bench failed: ${(error as Error).stack ?? error}`);
  exitCode = 1;
} finally {
  // Children first: stop polling, let their checks finish, then close their IPC (they exit on it).
  await Promise.all(alive().map((c) => c.ask("stop").catch(() => {})));
  for (let waited = 0; waited < DRAIN_MS; waited += 100) {
    const busy = await Promise.all(
      alive().map((c) =>
        c.stats().then(
          (st) => st.inFlight,
          () => 0,
        ),
      ),
    );
    if (busy.every((x) => x === 0)) break;
    await sleep(100);
  }
  for (const c of alive()) {
    const exited = new Promise((r) => c.proc.once("exit", r));
    c.proc.disconnect();
    await Promise.race([exited, sleep(5_000)]);
    if (c.proc.exitCode === null && c.proc.signalCode === null) c.proc.kill("SIGKILL");
  }
  stack?.grader.stop();
  // Let checks in flight finish before the database goes away (stop() only ends the polling).
  for (let waited = 0; running() > 0 && waited < DRAIN_MS; waited += 50) await sleep(50);
  actor.closeAll();
  await stack?.stop();
  await fs.rm(labsDir, { recursive: true, force: true });
}
process.exit(exitCode);
