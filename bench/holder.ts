/**
 * Terminal holder benchmark: keystroke echo latency and output throughput of one shell on a netns
 * sshd host, raw (an ssh2 PTY shell straight from sshd) against the same machine's terminal holder
 * (ssh2 direct-streamlocal -> labdeck-holder -> PTY), in one run, interleaved. Also the holder's
 * RSS with 3 terminals and its CPU while streaming (from /proc: the host shares this kernel).
 *
 *   flock /tmp/labdeck-test.lock npx tsx bench/holder.ts [--keystrokes 500] [--gap-ms 20] [--mib 50] [--json out.json]
 */
import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { z } from "zod";
import { benchFlags } from "./lib/flags";

const SUBNET = 79; // third octet of the host's 10.213.S.0/24
const COLS = 120; // PTY width, characters
const ROWS = 40; // PTY height, lines
const THROUGHPUT_TIMEOUT_MS = 600_000; // longest wait for a throughput run's marker, ms
const WARMUP_KEYSTROKES = 20; // keystrokes per path before measuring
const WARMUP_MIB = 2; // MiB per path before the measured throughput run

const Flags = z.object({
  keystrokes: z.coerce.number().int().min(1).max(100_000).default(500),
  "gap-ms": z.coerce.number().min(0).max(10_000).default(20),
  mib: z.coerce.number().positive().max(4096).default(50),
  json: z.string().min(1).optional(),
});

function flags(): z.infer<typeof Flags> {
  return benchFlags(Flags, "usage: npx tsx bench/holder.ts [--keystrokes N] [--gap-ms MS] [--mib N] [--json FILE]");
}

const opts = flags();
process.env.LOG_LEVEL ??= "warn";
const { createNetnsHosts } = await import("../server/testing/netns-hosts");
const { connectSsh } = await import("../server/ssh/connect");
const { connectHolder, HolderTerminal } = await import("../server/holder/client");
const {
  MIB,
  SETTLE_MS,
  LINE_CHARS,
  cpuSeconds,
  msSince,
  now,
  rawTerm: openRaw,
  rssMiB,
  run,
  sleep,
  stats,
  type,
} = await import("./lib/measure");
type Term = import("./lib/measure").Term;

type Endpoint = Parameters<typeof connectSsh>[0];

async function holderTerm(endpoint: Endpoint, id: string): Promise<Term & { offsetsOk: () => boolean }> {
  const client = await connectSsh(endpoint);
  const link = await connectHolder(client);
  let expected = -1;
  let ok = true;
  const term = {
    name: "holder" as const,
    sink: null as ((chunk: Buffer) => void) | null,
    write: (d: string) => void holder.write(d),
    close: async () => {
      link.close();
      client.end();
    },
    offsetsOk: () => ok,
  };
  const holder = new HolderTerminal(
    id,
    {
      onOutput: (offset, data) => {
        if (expected >= 0 && offset !== expected) ok = false;
        expected = offset + data.length;
        term.sink?.(data);
      },
    },
    { size: { cols: COLS, rows: ROWS } },
  );
  await holder.attach(link);
  return term;
}

/** Prints about `mib` MiB in the PTY; MiB/s from the bytes received; the holder's CPU over the run. */
async function throughput(term: Term, mib: number, holderPid: number) {
  const cpu = process.cpuUsage();
  const holderCpu = await cpuSeconds(holderPid);
  const r = await run(term, `head -c ${Math.round(mib * MIB)} /dev/zero | tr '\\0' x`, THROUGHPUT_TIMEOUT_MS);
  const used = process.cpuUsage(cpu);
  const holderUsed = (await cpuSeconds(holderPid)) - holderCpu;
  return {
    mibPerS: Math.round((r.bytes / MIB / (r.ms / 1000)) * 10) / 10,
    seconds: Math.round(r.ms) / 1000,
    mib: Math.round((r.bytes / MIB) * 100) / 100,
    chunks: r.chunks,
    avgChunkBytes: Math.round(r.bytes / r.chunks),
    cpuPctOfOneCore: Math.round(((used.user + used.system) / 1000 / r.ms) * 100),
    holderCpuPctOfOneCore: Math.round((holderUsed / (r.ms / 1000)) * 100),
  };
}

const dir = await fs.mkdtemp(path.join(os.tmpdir(), "labdeck-bench-holder-"));
let set: Awaited<ReturnType<typeof createNetnsHosts>> | undefined;
const cleanup = async () => {
  await set?.destroy();
  await fs.rm(dir, { recursive: true, force: true });
};
process.once("SIGINT", () => void cleanup().finally(() => process.exit(130)));
process.once("SIGTERM", () => void cleanup().finally(() => process.exit(130)));
let exitCode = 0;
try {
  set = await createNetnsHosts({ id: "bh", names: ["node01"], subnet: SUBNET, dir });
  const host = set.hosts[0]!;
  const holderPid = host.holderPid!;
  const endpoint: Endpoint = {
    name: host.name,
    host: host.host,
    port: host.port,
    user: host.user,
    privateKey: host.privateKey,
    hostKey: host.hostKey,
  };
  const rssIdle = await rssMiB(holderPid);
  const holder = await holderTerm(endpoint, "main");
  const terms = [await openRaw(endpoint, { cols: COLS, rows: ROWS }), holder] as const;
  // Two more terminals on the holder, each with some scrollback: the "3 terminals" of a lab machine.
  const extra = [await holderTerm(endpoint, "second"), await holderTerm(endpoint, "third")];
  for (const t of extra) await run(t, "seq 1 20000 >/dev/null; ls -la /usr/bin | head -200");

  const tp: Record<string, Awaited<ReturnType<typeof throughput>>> = {};
  for (const term of terms) {
    await run(term, "stty -echoctl; hostname");
    await throughput(term, WARMUP_MIB, holderPid);
    tp[term.name] = await throughput(term, opts.mib, holderPid);
    console.error(`${term.name}: ${tp[term.name]!.mibPerS} MiB/s`);
  }
  const rss3 = await rssMiB(holderPid);

  for (const term of terms) await run(term, "echo cat-starts");
  for (const term of terms) term.write("cat\r");
  await sleep(SETTLE_MS * 4);
  const lat: Record<string, number[]> = { raw: [], holder: [] };
  const holderCpu0 = await cpuSeconds(holderPid);
  const typingStarted = now();
  for (const term of terms) await type(term, WARMUP_KEYSTROKES, opts["gap-ms"], []);
  for (let done = 0, line = 0; done < opts.keystrokes; done += LINE_CHARS, line++) {
    const n = Math.min(LINE_CHARS, opts.keystrokes - done);
    for (const term of line % 2 ? [...terms].reverse() : terms) await type(term, n, opts["gap-ms"], lat[term.name]!);
  }
  const typingCpuPct = Math.round((((await cpuSeconds(holderPid)) - holderCpu0) / (msSince(typingStarted) / 1000)) * 1000) / 10;
  const raw = stats(lat.raw!);
  const hd = stats(lat.holder!);
  const result = {
    flags: opts,
    echoMs: { raw, holder: hd, p50DiffMs: Math.round((hd.p50 - raw.p50) * 1000) / 1000 },
    throughput: { raw: tp.raw!, holder: tp.holder!, ratio: Math.round((tp.holder!.mibPerS / tp.raw!.mibPerS) * 100) / 100 },
    holderRssMiB: { idle: rssIdle, threeTerminals: rss3 },
    holderCpuPctWhileTyping: typingCpuPct,
    holderOffsetsOk: holder.offsetsOk(),
  };

  const row = (label: string, a: string | number, b: string | number, c = "") =>
    console.log(`${label.padEnd(28)}${String(a).padStart(12)}${String(b).padStart(12)}  ${c}`);
  console.log(`\nHolder benchmark: ${opts.keystrokes} keystrokes ${opts["gap-ms"]} ms apart, ${opts.mib} MiB of x`);
  row("", "raw ssh", "holder", "holder vs raw");
  for (const k of ["p50", "p90", "p99", "max"] as const) {
    row(
      `echo ${k} (ms)`,
      raw[k].toFixed(3),
      hd[k].toFixed(3),
      k === "p50" ? `${result.echoMs.p50DiffMs >= 0 ? "+" : ""}${result.echoMs.p50DiffMs} ms (target ≤ +0.3)` : "",
    );
  }
  const [a, b] = [tp.raw!, tp.holder!];
  row("throughput (MiB/s)", a.mibPerS, b.mibPerS, `${result.throughput.ratio}x (target ≥ 0.8)`);
  row("time (s) / MiB received", `${a.seconds}/${a.mib}`, `${b.seconds}/${b.mib}`);
  row("chunks (avg bytes)", `${a.chunks} (${a.avgChunkBytes})`, `${b.chunks} (${b.avgChunkBytes})`);
  row("client CPU (% one core)", a.cpuPctOfOneCore, b.cpuPctOfOneCore);
  row("holder CPU streaming (%)", "-", b.holderCpuPctOfOneCore);
  row("holder CPU typing (%)", "-", typingCpuPct);
  row("holder RSS (MiB)", "-", `${rssIdle} → ${rss3}`, "idle → 3 terminals after the runs");
  if (!result.holderOffsetsOk) console.log("WARNING: offset gaps in holder output");
  console.log(JSON.stringify(result));
  if (opts.json) await fs.writeFile(opts.json, JSON.stringify(result, null, 2) + "\n");
  for (const term of [...terms, ...extra]) await term.close();
} catch (error) {
  console.error(`bench failed: ${(error as Error).stack ?? error}`);
  exitCode = 1;
} finally {
  await cleanup();
}
process.exit(exitCode);
