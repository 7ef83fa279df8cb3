/**
 * Restart benchmark: the time from a new server process listening to every one
 * of N open terminals echoing again, after `kill -9` of the one that served them. Real sshd hosts
 * (netns) with the real terminal holder, the embedded PostgreSQL, and the production terminal
 * gateway as its own OS process (server/testing/gateway-process.ts). The terminals are Node
 * clients that do what a browser page does (server/testing/terminal-client.ts ResumingTestClient:
 * offsets, numbered input, and the page's own reconnect backoff from components/terminal/connection.ts).
 *
 * Each terminal sets a shell variable, the gateway is killed, each terminal types `echo back-$VAR`
 * while no server runs, a new gateway starts after --outage-ms, and each terminal's time from
 * "listening" to the echo of its own variable is taken: its same shell is back and its outage
 * input was applied. Same run, as the baseline: the same with one terminal.
 *
 *   flock /tmp/labdeck-test.lock npx tsx bench/restart.ts [--terminals 100] [--outage-ms 3000] [--json out.json]
 */
import fs from "node:fs/promises";
import { z } from "zod";
import { freePort, startTestStack, type TestStack } from "../server/testing/stack";
import { kill9, spawnGateway, type GatewayProcess } from "../server/testing/spawn-gateway";
import { ResumingTestClient } from "../server/testing/terminal-client";
import { benchFlags } from "./lib/flags";

const SUBNET = 76; // third octet of the hosts' 10.213.S.0/24 (unused by every test)
const MACHINES = ["controlplane", "node01", "node02"] as const;
const PROMPT = /[#$] $/;
const OPEN_TIMEOUT_MS = 120_000; // every terminal's first prompt, ms
const BACK_TIMEOUT_MS = 60_000; // every terminal's echo after the restart, ms
const TARGET_MS = 5_000; // the promise: all terminals echoing again within 5 s of listening

const Flags = z.object({
  terminals: z.coerce.number().int().min(1).max(300).default(100),
  "outage-ms": z.coerce.number().int().min(0).max(60_000).default(3_000),
  json: z.string().min(1).optional(),
});

function flags(): z.infer<typeof Flags> {
  return benchFlags(Flags, "usage: npx tsx bench/restart.ts [--terminals N] [--outage-ms MS] [--json FILE]");
}

/** CPU seconds (user + system) a process has used so far. */
async function cpuSeconds(pid: number): Promise<number> {
  const fields = (await fs.readFile(`/proc/${pid}/stat`, "utf8")).split(") ")[1]!.split(" ");
  return (Number(fields[11]) + Number(fields[12])) / 100; // utime, stime in clock ticks (USER_HZ 100)
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

interface RunResult {
  terminals: number;
  p50Ms: number;
  p90Ms: number;
  maxMs: number;
  reconnectsPerTerminal: number;
  /** Terminals that got a snapshot or reset instead of their bytes (0 expected). */
  repainted: number;
  gaps: number;
  /** The new gateway's CPU from listening to every terminal back, s. */
  gatewayCpuS: number;
}

/** One kill -9 and restart with `count` open terminals on sessions `sessionIds`. */
async function run(stack: TestStack, sessionIds: string[], count: number, outageMs: number, tag: string): Promise<RunResult> {
  const port = await freePort();
  let gateway: GatewayProcess = await spawnGateway({ databaseUrl: stack.databaseUrl, secret: stack.secret, port });
  const url = () => `ws://127.0.0.1:${port}/ws/terminal`;
  const clients = Array.from({ length: count }, (_, i) => {
    const n = Math.floor(i / MACHINES.length);
    // One learner per session, as in a class (the gateway caps sockets per user).
    return new ResumingTestClient(url, stack.token(sessionIds[n]!, MACHINES[i % MACHINES.length]!, "write", `bench-restart-${n}`), {
      browserBackoff: true,
    });
  });
  try {
    for (const c of clients) c.start();
    await Promise.all(clients.map((c) => c.waitFor((x) => PROMPT.test(x.tail(256)), OPEN_TIMEOUT_MS, "first prompt")));
    clients.forEach((c, i) => c.input(`export RV=${tag}x${i * 7}\r`));
    await Promise.all(
      clients.map((c) => c.waitFor((x) => x.pendingInputs === 0 && PROMPT.test(x.tail(64)), OPEN_TIMEOUT_MS, "variable set")),
    );

    await kill9(gateway);
    const connectsBefore = clients.map((c) => c.connects);
    clients.forEach((c) => c.input('echo "back-$RV"\r'));
    await new Promise((r) => setTimeout(r, outageMs));
    gateway = await spawnGateway({ databaseUrl: stack.databaseUrl, secret: stack.secret, port });
    const cpuAtListen = await cpuSeconds(gateway.child.pid!);
    const times = await Promise.all(
      clients.map(async (c, i) => {
        const want = new RegExp(`^back-${tag}x${i * 7}\\r$`, "m");
        await c.waitFor((x) => want.test(x.tail(4096)), BACK_TIMEOUT_MS, `terminal ${i} back`);
        return performance.now() - gateway.listeningAt;
      }),
    );
    const gatewayCpuS = (await cpuSeconds(gateway.child.pid!)) - cpuAtListen;
    times.sort((a, b) => a - b);
    return {
      terminals: count,
      p50Ms: percentile(times, 50),
      p90Ms: percentile(times, 90),
      maxMs: times.at(-1)!,
      reconnectsPerTerminal: clients.reduce((n, c, i) => n + c.connects - connectsBefore[i]!, 0) / count,
      repainted: clients.filter((c) => c.snapshots.length + c.resets.length > 0).length,
      gaps: clients.reduce((n, c) => n + c.gaps.length, 0),
      gatewayCpuS,
    };
  } finally {
    for (const c of clients) c.stop();
    await kill9(gateway);
  }
}

async function main(): Promise<void> {
  const f = flags();
  const stack = await startTestStack({ subnet: SUBNET });
  try {
    const sessionCount = Math.ceil(f.terminals / MACHINES.length);
    const sessionIds: string[] = [];
    for (let i = 0; i < sessionCount; i++) sessionIds.push(await stack.startSession(`bench-restart-${i}`));
    console.log(`restart bench: ${f.terminals} terminals on ${sessionCount} sessions (netns sshd + holder), outage ${f["outage-ms"]} ms`);
    const one = await run(stack, sessionIds.slice(0, 1), 1, f["outage-ms"], "a");
    const all = await run(stack, sessionIds, f.terminals, f["outage-ms"], "b");
    const row = (r: RunResult) =>
      `| ${r.terminals} | ${r.p50Ms.toFixed(0)} | ${r.p90Ms.toFixed(0)} | ${r.maxMs.toFixed(0)} | ${r.reconnectsPerTerminal.toFixed(1)} | ${r.repainted} | ${r.gaps} | ${r.gatewayCpuS.toFixed(2)} |`;
    console.log("\n| terminals | back p50 ms | p90 ms | all back ms | reconnects each | repainted | gaps | new gateway CPU s |");
    console.log("|---|---|---|---|---|---|---|---|");
    console.log(row(one));
    console.log(row(all));
    console.log(
      `\nall ${all.terminals} back ${all.maxMs.toFixed(0)} ms after listening (target ≤ ${TARGET_MS} ms: ${all.maxMs <= TARGET_MS ? "met" : "missed"}); ${(all.maxMs / Math.max(1, one.maxMs)).toFixed(1)}× one terminal's`,
    );
    if (f.json) await fs.writeFile(f.json, JSON.stringify({ outageMs: f["outage-ms"], one, all }, null, 2));
  } finally {
    await stack.stop();
  }
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
