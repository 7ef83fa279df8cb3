/**
 * Terminal benchmark: keystroke echo latency and output throughput of one shell on node01, raw
 * (ssh2 straight to the host) against the WebSocket gateway (TerminalTestClient -> gateway ->
 * ssh2), in one run against one test stack. Everything but sshd runs in this process: the
 * gateway, its ssh2 client, the WebSocket client and the raw ssh2 client share one event loop.
 *
 *   npx tsx bench/terminal.ts [--keystrokes 500] [--gap-ms 20] [--mib 50] [--payload x|base64] [--json out.json]
 */
import fs from "node:fs/promises";
import { z } from "zod";
import { benchFlags } from "./lib/flags";

const SUBNET = 77; // third octet of the hosts' 10.213.S.0/24
const MACHINE = "node01";
const COLS = 120; // PTY width, characters
const ROWS = 40; // PTY height, lines
const THROUGHPUT_TIMEOUT_MS = 600_000; // longest wait for a throughput run's marker, ms
const WARMUP_KEYSTROKES = 20; // keystrokes per path before measuring
const WARMUP_MIB = 2; // MiB per path printed before the measured throughput run

const Flags = z.object({
  keystrokes: z.coerce.number().int().min(1).max(100_000).default(500),
  "gap-ms": z.coerce.number().min(0).max(10_000).default(20),
  mib: z.coerce.number().positive().max(4096).default(50),
  /** x: `tr` of /dev/zero, one long line (PTY-cheap); base64: 76-column lines of random data. */
  payload: z.enum(["x", "base64"]).default("x"),
  json: z.string().min(1).optional(),
});

function flags(): z.infer<typeof Flags> {
  return benchFlags(Flags, "usage: npx tsx bench/terminal.ts [--keystrokes N] [--gap-ms MS] [--mib N] [--payload x|base64] [--json FILE]");
}

const opts = flags();
process.env.LOG_LEVEL ??= "warn"; // before the logger is imported: keep pino lines out of the table
const { startTestStack } = await import("../server/testing/stack");
const { TerminalTestClient } = await import("../server/testing/terminal-client");
const { MIB, SETTLE_MS, LINE_CHARS, gatewayTerm, rawTerm: openRaw, run, sleep, stats, type } = await import("./lib/measure");
const { machineEndpoint } = await import("../server/sessions/lab-sessions");
type Term = import("./lib/measure").Term;

/** Prints about `mib` MiB in the PTY (generated on the host); MiB/s from the bytes received. */
async function throughput(term: Term, mib: number) {
  const rssBefore = process.memoryUsage().rss;
  const cpu = process.cpuUsage();
  const command =
    opts.payload === "x"
      ? `head -c ${Math.round(mib * MIB)} /dev/zero | tr '\\0' x`
      : `head -c ${Math.round((mib * MIB * 3) / 4)} /dev/urandom | base64`;
  const r = await run(term, command, THROUGHPUT_TIMEOUT_MS);
  const used = process.cpuUsage(cpu);
  const rssAfter = process.memoryUsage().rss;
  return {
    mibPerS: Math.round((r.bytes / MIB / (r.ms / 1000)) * 10) / 10,
    seconds: Math.round(r.ms) / 1000,
    mib: Math.round((r.bytes / MIB) * 100) / 100,
    chunks: r.chunks,
    avgChunkBytes: Math.round(r.bytes / r.chunks),
    cpuPctOfOneCore: Math.round(((used.user + used.system) / 1000 / r.ms) * 100),
    rssBeforeMiB: Math.round(rssBefore / MIB),
    rssAfterMiB: Math.round(rssAfter / MIB),
  };
}

let stack: Awaited<ReturnType<typeof startTestStack>> | undefined;
const stopOnSignal = () => void (stack?.stop() ?? Promise.resolve()).finally(() => process.exit(130));
process.once("SIGINT", stopOnSignal);
process.once("SIGTERM", stopOnSignal);
let exitCode = 0;
try {
  const t0 = Date.now();
  stack = await startTestStack({ subnet: SUBNET });
  const sid = await stack.startSession("bench");
  const endpoint = await machineEndpoint(stack.db, sid, MACHINE);
  if (!endpoint) throw new Error(`no endpoint for ${MACHINE}`);
  const client = await TerminalTestClient.connect(stack.wsUrl, { token: stack.token(sid, MACHINE), cols: COLS, rows: ROWS });
  const terms = [await openRaw(endpoint, { cols: COLS, rows: ROWS }), await gatewayTerm(client)] as const;
  console.error(`stack up in ${Date.now() - t0} ms; ${MACHINE} at ${endpoint.host}:${endpoint.port}`);

  // Throughput first, at the bash prompt (waits out the slow .bashrc too).
  const tp: Record<string, Awaited<ReturnType<typeof throughput>>> = {};
  for (const term of terms) {
    await run(term, "stty -echoctl; hostname");
    await throughput(term, WARMUP_MIB);
    tp[term.name] = await throughput(term, opts.mib);
    console.error(`${term.name}: ${tp[term.name]!.mibPerS} MiB/s`);
  }

  // Latency: `cat` in cooked mode, so the PTY line discipline echoes each keystroke.
  for (const term of terms) await run(term, "echo cat-starts");
  for (const term of terms) term.write("cat\r");
  await sleep(SETTLE_MS * 4);
  const lat: Record<string, number[]> = { raw: [], gateway: [] };
  for (const term of terms) await type(term, WARMUP_KEYSTROKES, opts["gap-ms"], []);
  for (let done = 0, line = 0; done < opts.keystrokes; done += LINE_CHARS, line++) {
    const n = Math.min(LINE_CHARS, opts.keystrokes - done);
    for (const term of line % 2 ? [...terms].reverse() : terms) await type(term, n, opts["gap-ms"], lat[term.name]!);
  }
  const raw = stats(lat.raw!);
  const gw = stats(lat.gateway!);
  const result = {
    machine: MACHINE,
    flags: opts,
    echoMs: {
      raw,
      gateway: gw,
      p50DiffMs: Math.round((gw.p50 - raw.p50) * 1000) / 1000,
      p50Ratio: Math.round((gw.p50 / raw.p50) * 100) / 100,
    },
    throughput: { raw: tp.raw!, gateway: tp.gateway!, ratio: Math.round((tp.gateway!.mibPerS / tp.raw!.mibPerS) * 100) / 100 },
    gatewayGaps: client.gaps.length,
  };

  const row = (label: string, a: string | number, b: string | number, c = "") =>
    console.log(`${label.padEnd(26)}${String(a).padStart(12)}${String(b).padStart(12)}  ${c}`);
  console.log(
    `\nTerminal benchmark, ${MACHINE}: ${opts.keystrokes} keystrokes ${opts["gap-ms"]} ms apart, ${opts.mib} MiB of ${opts.payload}`,
  );
  row("", "raw", "gateway", "gateway vs raw");
  for (const k of ["p50", "p90", "p99", "max"] as const) {
    row(
      `echo ${k} (ms)`,
      raw[k].toFixed(3),
      gw[k].toFixed(3),
      k === "p50" ? `${result.echoMs.p50DiffMs >= 0 ? "+" : ""}${result.echoMs.p50DiffMs} ms, ${result.echoMs.p50Ratio}x` : "",
    );
  }
  const [a, b] = [tp.raw!, tp.gateway!];
  row("throughput (MiB/s)", a.mibPerS, b.mibPerS, `${result.throughput.ratio}x`);
  row("time (s) / MiB received", `${a.seconds}/${a.mib}`, `${b.seconds}/${b.mib}`);
  row("chunks (avg bytes)", `${a.chunks} (${a.avgChunkBytes})`, `${b.chunks} (${b.avgChunkBytes})`);
  row("process CPU (% one core)", a.cpuPctOfOneCore, b.cpuPctOfOneCore);
  row("process RSS before→after", `${a.rssBeforeMiB}→${a.rssAfterMiB}`, `${b.rssBeforeMiB}→${b.rssAfterMiB}`, "MiB");
  if (client.gaps.length) console.log(`WARNING: ${client.gaps.length} offset gaps in gateway output`);
  console.log(JSON.stringify(result));
  if (opts.json) await fs.writeFile(opts.json, JSON.stringify(result, null, 2) + "\n");
  for (const term of terms) await term.close();
} catch (error) {
  console.error(`bench failed: ${(error as Error).stack ?? error}`);
  exitCode = 1;
} finally {
  await stack?.stop();
}
process.exit(exitCode);
