/**
 * One grader process for bench/grader.ts --processes N: the real Grader over the bench stack's
 * database (DATABASE_URL), with its own SSH pool, lab catalog and event publisher, as a server
 * process runs it. Forked by the bench (node --import tsx, IPC channel); not started until told.
 *   parent -> child: { id, cmd: "start" | "stop" | "stats" | "watch" | "nudge", sessions?, since? }
 *   child -> parent: { ready: true } once, then { id, ...reply } per command (stats: cumulative
 *   CPU µs, checks started, RSS, in flight, per session the time of this process's newest check
 *   start, and for the sessions being watched the first check start at or after `since`; nudge:
 *   Grader.nudge for each of `sessions`, as the terminal gateway does on the learner's Enter).
 *   DATABASE_URL=... BENCH_SECRET_HEX=... node --import tsx bench/grader-child.ts <labsDir> <intervalMs> <jitter> <concurrency>
 */
import { createDb } from "../server/db/client";
import { EventBus } from "../server/events/bus";
import { Grader } from "../server/grader/grader";
import { LabCatalog } from "../server/labs/catalog";
import { log } from "../server/log";
import { SshExecPool } from "../server/ssh/exec";
import { configureMachineKeys } from "../server/machines/sealed-keys";

const [labsDir, intervalMs, jitter, concurrency] = process.argv.slice(2);
const databaseUrl = process.env.DATABASE_URL;
if (!labsDir || !databaseUrl || !process.env.BENCH_SECRET_HEX || !process.send) {
  console.error(
    "usage: DATABASE_URL=... BENCH_SECRET_HEX=... node --import tsx bench/grader-child.ts <labsDir> <intervalMs> <jitter> <concurrency> (forked, with IPC)",
  );
  process.exit(2);
}
configureMachineKeys(Buffer.from(process.env.BENCH_SECRET_HEX, "hex"));
const db = createDb(databaseUrl);
const bus = new EventBus({ db, databaseUrl, log }); // publishes only (NOTIFY); the bench listens
const pool = new SshExecPool();
const grader = new Grader(
  { db, labs: new LabCatalog(labsDir), pool, bus, log },
  { intervalMs: Number(intervalMs), jitter: Number(jitter), concurrency: Number(concurrency) },
);

let checks = 0;
const lastStart = new Map<string, number>(); // session -> Date.now() of this process's newest check start
let watch = { sessions: new Set<string>(), since: Infinity };
const firstSince = new Map<string, number>();
// Counts the checks this process won the claim for (runClaimed runs only after a won claim), as server/grader/replicas.int.test.ts does.
const inner = grader as unknown as { runClaimed: (sessionId: string, ...rest: unknown[]) => Promise<unknown> };
const runClaimed = inner.runClaimed.bind(grader);
inner.runClaimed = (sessionId, ...rest) => {
  const now = Date.now();
  checks++;
  lastStart.set(sessionId, now);
  if (watch.sessions.has(sessionId) && now >= watch.since && !firstSince.has(sessionId)) firstSince.set(sessionId, now);
  return runClaimed(sessionId, ...rest);
};

type Command = { id: number; cmd: "start" | "stop" | "stats" | "watch" | "nudge"; sessions?: string[]; since?: number };
process.on("message", (m: Command) => {
  const reply = (body: object = {}) => process.send!({ id: m.id, ...body });
  if (m.cmd === "start") grader.start();
  else if (m.cmd === "stop") grader.stop();
  else if (m.cmd === "nudge") for (const sid of m.sessions ?? []) grader.nudge(sid);
  else if (m.cmd === "watch") {
    watch = { sessions: new Set(m.sessions ?? []), since: m.since ?? Date.now() };
    firstSince.clear();
  } else if (m.cmd === "stats") {
    const cpu = process.cpuUsage();
    return reply({
      cpuUs: cpu.user + cpu.system,
      checks,
      inFlight: grader.checksInFlight,
      rss: process.memoryUsage().rss,
      lastStart: Object.fromEntries(lastStart),
      firstSince: Object.fromEntries(firstSince),
    });
  }
  reply();
});
// The bench going away (its IPC channel closes) ends us too: no grader left polling a dead database.
process.on("disconnect", () => {
  grader.stop();
  pool.closeAll();
  void db.$disconnect().finally(() => process.exit(0));
});
process.send({ ready: true });
