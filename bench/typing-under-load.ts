/**
 * Typing under load: keydown-to-glyph of one learner's terminal in Chromium
 * (bench/lib/typing-page.ts: xterm.js with the lab page's options and its TerminalConnection)
 * through a gateway process (server/testing/gateway-process.ts, the "server process"), in three
 * phases of one run:
 *   idle        nothing else runs;
 *   streaming   N other sessions' terminals run `yes`, each watched by a viewer that reads like the
 *               lab page (bench/lib/stream-viewers.ts: a WebSocket client in a child process that
 *               feeds every frame to xterm.js, headless; it acknowledges like the page does);
 *   unwatched   the same N `yes` go on with their viewers' sockets closed.
 * Each phase also types into a raw ssh2 shell on the same machine (the baseline) and into another
 * session's terminal on it through the same gateway from Node (no browser: with the browser's
 * figure, it tells the gateway's delay from the browser's), and records the gateway process's CPU
 * and the bytes it relayed (/proc/<pid>/io wchar, and what viewers got).
 * --viewer-nice N runs the viewers' process at that nice level: they stand for other learners'
 * browsers, which run on other computers, not on the server's CPU as here (0: as before).
 * --viewer-parse none goes further: the viewers acknowledge each frame as it arrives without
 * parsing it (browsers elsewhere that keep up): the server relays as much as with parsing viewers
 * or more, and this machine's cores carry only the server's side of the streams.
 * --machines-nice N renices every process in the streaming machines' namespaces (sshd, holder,
 * shells, `yes`) once the streams run: they stand for lab VMs with CPUs of their own.
 * The typed terminal is on controlplane; the streams on node01 and node02 (netns sshd hosts, one
 * holder each, as separate machines would be).
 * --stream-gateway separate relays the streams through a second gateway process on the same
 * database (a replica), the typed terminals through the first: terminals spread over processes.
 * Each phase reports how long the typed gateway's main thread, when woken, waited for a CPU on
 * average (schedstat): the share of the delay that is the machine's cores, not the gateway's work.
 *
 *   flock /tmp/labdeck-test.lock npx tsx bench/typing-under-load.ts [--keys 150] [--gap-ms 40] [--streams 20] [--settle-s 4] [--phase-s 75] [--viewer-nice 0] [--viewer-parse xterm|none] [--machines-nice 0] [--stream-gateway same|separate] [--json out.json]
 */
import { fork, spawn, type ChildProcess } from "node:child_process";
import os from "node:os";
import fs from "node:fs/promises";
import path from "node:path";
import { z } from "zod";
import { benchFlags } from "./lib/flags";

const SUBNET = 87; // third octet of the hosts' 10.213.S.0/24
const TYPED_MACHINE = "controlplane";
const STREAM_MACHINES = ["node01", "node02"] as const;
const COLS = 120; // PTY width, characters (the page's terminal size)
const ROWS = 40; // PTY height, lines
const PROMPT = /[#$][\s\u00a0]*$/; // the end of the screen text (xterm rows are right-trimmed, mostly)

const Flags = z.object({
  keys: z.coerce.number().int().min(10).max(10_000).default(150),
  "gap-ms": z.coerce.number().min(0).max(10_000).default(40),
  streams: z.coerce.number().int().min(0).max(22).default(20),
  "settle-s": z.coerce.number().min(0).max(120).default(4),
  /** A phase stops typing after this long (a key lost costs ECHO_TIMEOUT_MS), s. */
  "phase-s": z.coerce.number().min(5).max(3600).default(75),
  "viewer-nice": z.coerce.number().int().min(0).max(19).default(0),
  /** "xterm": viewers parse every frame with headless xterm.js here; "none": they only acknowledge (their browsers are elsewhere). */
  "viewer-parse": z.enum(["xterm", "none"]).default("xterm"),
  /** Nice level for every process of the streaming machines (node01, node02: their sshd, holder, shells, `yes`): 0 leaves them. */
  "machines-nice": z.coerce.number().int().min(0).max(19).default(0),
  /** "separate": the streams go through a second gateway process (a replica), not the typed one. */
  "stream-gateway": z.enum(["same", "separate"]).default("same"),
  json: z.string().min(1).optional(),
});

function flags(): z.infer<typeof Flags> {
  return benchFlags(
    Flags,
    "usage: npx tsx bench/typing-under-load.ts [--keys N] [--gap-ms MS] [--streams N] [--settle-s S] [--phase-s S] [--viewer-nice N] [--viewer-parse xterm|none] [--machines-nice N] [--stream-gateway same|separate] [--json FILE]",
  );
}

const opts = flags();
process.env.LOG_LEVEL ??= "warn";
const { typingPageHtml } = await import("./lib/bundle");
const { chromium } = await import("playwright-core");
const { CHROMIUM_ARGS, CHROMIUM_PATH } = await import("../e2e/chromium");
const { startTestStack, freePort } = await import("../server/testing/stack");
const { machineEndpoint } = await import("../server/sessions/lab-sessions");
const { TerminalTestClient } = await import("../server/testing/terminal-client");
const m = await import("./lib/measure");
type Stats = import("./lib/measure").Stats;

/** Starts a gateway process over the stack's database; resolves once it listens. */
function startGateway(stack: { databaseUrl: string; secret: Buffer }, port: number): Promise<ChildProcess> {
  // LABDECK_BENCH_GATEWAY_NODE_ARGS: extra node flags for the gateway (e.g. --cpu-prof --cpu-prof-dir=DIR).
  const nodeArgs = process.env.LABDECK_BENCH_GATEWAY_NODE_ARGS?.split(" ").filter(Boolean) ?? [];
  const child = spawn(process.execPath, [...nodeArgs, "--import", "tsx", "server/testing/gateway-process.ts"], {
    env: {
      ...process.env,
      DATABASE_URL: stack.databaseUrl,
      LABDECK_TEST_SECRET: stack.secret.toString("hex"),
      PORT: String(port),
      LOG_LEVEL: "warn",
    },
    stdio: ["ignore", "pipe", "inherit"],
  });
  return new Promise((resolve, reject) => {
    let out = "";
    child.stdout!.on("data", (chunk: Buffer) => {
      out += chunk.toString("utf8");
      if (out.includes("GATEWAY LISTENING")) resolve(child);
    });
    child.once("exit", (code) => reject(new Error(`gateway process exited (${code}) before listening: ${out}`)));
  });
}

function ask<T>(child: ChildProcess, cmd: string, key: string): Promise<T> {
  return new Promise((resolve) => {
    const on = (message: Record<string, unknown>) => {
      if (!(key in message)) return;
      child.off("message", on);
      resolve(message[key] as T);
    };
    child.on("message", on);
    child.send({ cmd });
  });
}

interface Phase {
  browser: Stats;
  browserLost: number;
  raw: Stats;
  rawLost: number;
  /** Through the gateway from Node (another session's shell on the same machine). */
  ws: Stats;
  wsLost: number;
  gatewayCpuPct: number;
  /** Bytes the gateway process wrote (its WebSockets and SSH channels) per second. */
  gatewayWrittenMiBps: number;
  gatewayReadMiBps: number;
  /** Output bytes the stream viewers received per second. */
  viewersMiBps: number;
  gatewayRssMiB: number;
  /** The typed gateway's main thread: average wait for a CPU each time it was woken, ms, and its share of the phase on a CPU. */
  gatewayWaitPerRunMs: number;
  gatewayRunPct: number;
  /** The streams' gateway process CPU (--stream-gateway separate), % of one core. */
  streamGatewayCpuPct?: number;
}

let stack: Awaited<ReturnType<typeof startTestStack>> | undefined;
let gateway: ChildProcess | undefined;
let streamGateway: ChildProcess | undefined;
let viewers: ChildProcess | undefined;
let wsClient: import("../server/testing/terminal-client").TerminalTestClient | undefined;
let browser: Awaited<ReturnType<typeof chromium.launch>> | undefined;
const cleanup = async () => {
  viewers?.kill("SIGKILL");
  await browser?.close().catch(() => undefined);
  // SIGTERM first: a gateway run with --cpu-prof in NODE_OPTIONS writes its profile as it exits.
  for (const child of [gateway, streamGateway]) {
    if (!child || child.exitCode !== null) continue;
    const exited = new Promise((r) => child.once("exit", r));
    child.kill("SIGTERM");
    await Promise.race([exited, new Promise((r) => setTimeout(r, 5_000))]);
    child.kill("SIGKILL");
  }
  await stack?.stop();
};
process.once("SIGINT", () => void cleanup().finally(() => process.exit(130)));
process.once("SIGTERM", () => void cleanup().finally(() => process.exit(130)));

let exitCode = 0;
try {
  const t0 = Date.now();
  stack = await startTestStack({ subnet: SUBNET });
  const typist = await stack.startSession("typist");
  const wsTypist = await stack.startSession("typist-ws");
  const streamers: { sid: string; machine: string }[] = [];
  for (let i = 0; i < opts.streams; i++)
    streamers.push({ sid: await stack.startSession(`streamer-${i}`), machine: STREAM_MACHINES[i % STREAM_MACHINES.length]! });
  const port = await freePort();
  gateway = await startGateway(stack, port);
  const gatewayPid = gateway.pid!;
  const wsUrl = `ws://127.0.0.1:${port}/ws/terminal`;
  let streamUrl = wsUrl;
  if (opts["stream-gateway"] === "separate") {
    const streamPort = await freePort();
    streamGateway = await startGateway(stack, streamPort);
    streamUrl = `ws://127.0.0.1:${streamPort}/ws/terminal`;
  }
  const endpoint = await machineEndpoint(stack.db, typist, TYPED_MACHINE);
  if (!endpoint) throw new Error(`no endpoint for ${TYPED_MACHINE}`);
  const raw = await m.rawTerm(endpoint, { cols: COLS, rows: ROWS });
  await m.run(raw, "stty -echoctl; hostname");
  raw.write("cat\r");
  wsClient = await TerminalTestClient.connect(wsUrl, { token: stack.token(wsTypist, TYPED_MACHINE), cols: COLS, rows: ROWS });
  await wsClient.waitFor(
    (c) => c.messages.some((msg) => msg.type === "status" && msg.state === "connected"),
    60_000,
    "ws terminal connected",
  );
  const ws = m.gatewayTerm(wsClient, "gateway-ws");
  await m.run(ws, "stty -echoctl; hostname");
  ws.write("cat\r");

  viewers = fork(path.resolve("bench/lib/stream-viewers.ts"), [], {
    execArgv: ["--import", "tsx"],
    env: {
      ...process.env,
      LABDECK_BENCH_STREAMS: JSON.stringify({
        url: streamUrl,
        tokens: streamers.map((s) => stack!.token(s.sid, s.machine, "write", s.sid)),
        parse: opts["viewer-parse"] === "xterm",
      }),
    },
  });
  if (opts["viewer-nice"] > 0) os.setPriority(viewers.pid!, opts["viewer-nice"]);
  await new Promise((resolve, reject) => {
    viewers!.once("message", resolve);
    viewers!.once("exit", (code) => reject(new Error(`stream viewers exited (${code})`)));
  });

  // The page is fulfilled by Playwright rather than loaded from the gateway, so Chromium would take it
  // for a public page and refuse its socket to loopback (Local Network Access): allow it.
  browser = await chromium.launch({
    executablePath: CHROMIUM_PATH,
    args: [...CHROMIUM_ARGS, "--disable-features=LocalNetworkAccessChecks"],
  });
  const page = await browser.newPage({ viewport: { width: 1200, height: 800 } });
  const html = await typingPageHtml();
  page.on("pageerror", (error) => console.error(`page error: ${error.message}`));
  await page.route(`http://127.0.0.1:${port}/bench*`, (route) => route.fulfill({ contentType: "text/html", body: html }));
  await page.goto(`http://127.0.0.1:${port}/bench?token=${encodeURIComponent(stack.token(typist, TYPED_MACHINE))}`);
  /** Polls the page (page.waitForFunction's rAF polling did not see the state here). */
  const waitInPage = async (what: string, test: (state: { status: string; text: string }) => boolean, timeoutMs: number) => {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const state = await page.evaluate(() => ({ status: window.__bench?.status ?? "loading", text: window.__bench?.text() ?? "" }));
      if (test(state)) return;
      if (Date.now() > deadline)
        throw new Error(
          `no ${what} in the page within ${timeoutMs} ms: ${JSON.stringify({ ...state, text: state.text.trim().slice(-300) })}`,
        );
      await m.sleep(200);
    }
  };
  await waitInPage("prompt", (s) => s.status === "connected" && PROMPT.test(s.text.trimEnd()), 60_000);
  await page.keyboard.type("stty -echoctl; cat\n");
  await waitInPage("cat", (s) => /cat\s*$/m.test(s.text.trimEnd()) || s.text.trimEnd().endsWith("cat"), 10_000);
  await m.sleep(500);
  await page.evaluate(() => window.__bench.newLine());
  console.error(`stack up in ${Date.now() - t0} ms; gateway pid ${gatewayPid}; ${opts.streams} stream sessions`);

  async function typeInPage(n: number, out: number[], lost: { count: number }) {
    const alphabet = "abcdefghijklmnopqrstuvwxyz";
    for (let i = 0; i < n; i++) {
      await page.keyboard.press(alphabet[i % alphabet.length]!);
      const ms = await page.evaluate((t) => window.__bench.waitGlyph(t), m.ECHO_TIMEOUT_MS);
      if (ms === null) lost.count++;
      else out.push(ms);
      await m.sleep(Math.max(0, opts["gap-ms"] - (ms ?? opts["gap-ms"])));
    }
    await page.keyboard.press("Enter");
    await m.sleep(m.SETTLE_MS);
    await page.evaluate(() => window.__bench.newLine());
  }

  /** Renices every process whose network namespace is one of `names`' hosts; returns how many. */
  async function reniceMachines(names: readonly string[], nice: number): Promise<number> {
    const links = new Set<string>();
    for (const h of stack!.hosts.hosts) if (names.includes(h.name)) links.add(await fs.readlink(`/proc/${h.pid}/ns/net`));
    let count = 0;
    for (const entry of await fs.readdir("/proc")) {
      if (!/^\d+$/.test(entry)) continue;
      const link = await fs.readlink(`/proc/${entry}/ns/net`).catch(() => "");
      if (!links.has(link)) continue;
      try {
        os.setPriority(Number(entry), nice);
        count++;
      } catch {
        // gone meanwhile
      }
    }
    return count;
  }

  async function phase(name: string): Promise<Phase> {
    const cpu0 = await m.cpuSeconds(gatewayPid);
    const io0 = await m.ioBytes(gatewayPid);
    const got0 = await ask<number>(viewers!, "stats", "bytes");
    const sched0 = await m.schedStat(gatewayPid);
    const streamCpu0 = streamGateway ? await m.cpuSeconds(streamGateway.pid!) : 0;
    const started = m.now();
    const b: number[] = [];
    const r: number[] = [];
    const w: number[] = [];
    const bLost = { count: 0 };
    const rLost = { count: 0 };
    const wLost = { count: 0 };
    const line = 10; // keys per line and path: short lines, so a phase cut by --phase-s still has both paths
    for (let done = 0, i = 0; done < opts.keys && m.msSince(started) < opts["phase-s"] * 1000; done += line, i++) {
      const n = Math.min(line, opts.keys - done);
      // The three paths in turn, each starting a line first as often as the others.
      const paths = [
        () => typeInPage(n, b, bLost),
        () => m.type(raw, n, opts["gap-ms"], r, rLost),
        () => m.type(ws, n, opts["gap-ms"], w, wLost),
      ];
      for (let k = 0; k < paths.length; k++) await paths[(i + k) % paths.length]!();
    }
    const seconds = m.msSince(started) / 1000;
    const io1 = await m.ioBytes(gatewayPid);
    const got1 = await ask<number>(viewers!, "stats", "bytes");
    const sched1 = await m.schedStat(gatewayPid);
    const result: Phase = {
      browser: m.stats(b),
      browserLost: bLost.count,
      raw: m.stats(r),
      rawLost: rLost.count,
      ws: m.stats(w),
      wsLost: wLost.count,
      gatewayCpuPct: Math.round((((await m.cpuSeconds(gatewayPid)) - cpu0) / seconds) * 100),
      gatewayWrittenMiBps: Math.round(((io1.written - io0.written) / m.MIB / seconds) * 10) / 10,
      gatewayReadMiBps: Math.round(((io1.read - io0.read) / m.MIB / seconds) * 10) / 10,
      viewersMiBps: Math.round(((got1 - got0) / m.MIB / seconds) * 10) / 10,
      gatewayRssMiB: await m.rssMiB(gatewayPid),
      gatewayWaitPerRunMs: Math.round(((sched1.waitMs - sched0.waitMs) / Math.max(1, sched1.runs - sched0.runs)) * 1000) / 1000,
      gatewayRunPct: Math.round(((sched1.runMs - sched0.runMs) / 10 / seconds) * 10) / 10,
      ...(streamGateway
        ? { streamGatewayCpuPct: Math.round((((await m.cpuSeconds(streamGateway.pid!)) - streamCpu0) / seconds) * 100) }
        : {}),
    };
    console.error(
      `${name}: browser p50 ${result.browser.p50} ms (lost ${result.browserLost}), raw p50 ${result.raw.p50} ms, gateway from Node p50 ${result.ws.p50} ms (lost ${result.wsLost}), gateway CPU ${result.gatewayCpuPct} %, its main thread waited ${result.gatewayWaitPerRunMs} ms for a CPU per wake-up`,
    );
    return result;
  }

  const phases: Record<string, Phase> = {};
  phases.idle = await phase("idle");
  await ask(viewers, "open", "opened");
  if (opts["machines-nice"] > 0)
    console.error(`reniced ${await reniceMachines(STREAM_MACHINES, opts["machines-nice"])} processes of ${STREAM_MACHINES.join(", ")}`);
  await m.sleep(opts["settle-s"] * 1000);
  phases.streaming = await phase("streaming");
  await ask(viewers, "close", "closed");
  await m.sleep(opts["settle-s"] * 1000);
  phases.unwatched = await phase("unwatched");

  const names = ["idle", "streaming", "unwatched"] as const;
  const row = (label: string, values: (string | number)[]) =>
    console.log(`${label.padEnd(34)}${values.map((v) => String(v).padStart(12)).join("")}`);
  console.log(
    `\nTyping under load: ${opts.keys} keys per phase ${opts["gap-ms"]} ms apart; ${opts.streams} other terminals running yes (viewers: WebSocket clients ${opts["viewer-parse"] === "xterm" ? "feeding headless xterm.js" : "acknowledging without parsing"}, nice ${opts["viewer-nice"]}; streaming machines nice ${opts["machines-nice"]}; streams through ${opts["stream-gateway"] === "same" ? "the typed gateway" : "a second gateway process"})`,
  );
  row("", [...names]);
  row(
    "browser keydown→glyph p50 (ms)",
    names.map((n) => phases[n]!.browser.p50.toFixed(1)),
  );
  row(
    "browser keydown→glyph p99 (ms)",
    names.map((n) => phases[n]!.browser.p99.toFixed(1)),
  );
  row(
    "browser keys lost (>5 s)",
    names.map((n) => phases[n]!.browserLost),
  );
  row(
    "raw ssh echo p50 (ms)",
    names.map((n) => phases[n]!.raw.p50.toFixed(2)),
  );
  row(
    "raw ssh echo p99 (ms)",
    names.map((n) => phases[n]!.raw.p99.toFixed(2)),
  );
  row(
    "raw ssh keys lost",
    names.map((n) => phases[n]!.rawLost),
  );
  row(
    "gateway from Node echo p50 (ms)",
    names.map((n) => phases[n]!.ws.p50.toFixed(2)),
  );
  row(
    "gateway from Node echo p99 (ms)",
    names.map((n) => phases[n]!.ws.p99.toFixed(2)),
  );
  row(
    "gateway from Node keys lost",
    names.map((n) => phases[n]!.wsLost),
  );
  row(
    "gateway CPU (% of one core)",
    names.map((n) => phases[n]!.gatewayCpuPct),
  );
  row(
    "gateway wrote (MiB/s)",
    names.map((n) => phases[n]!.gatewayWrittenMiBps),
  );
  row(
    "gateway read (MiB/s)",
    names.map((n) => phases[n]!.gatewayReadMiBps),
  );
  row(
    "stream viewers received (MiB/s)",
    names.map((n) => phases[n]!.viewersMiBps),
  );
  row(
    "gateway RSS (MiB)",
    names.map((n) => phases[n]!.gatewayRssMiB),
  );
  row(
    "gateway main thread on a CPU (%)",
    names.map((n) => phases[n]!.gatewayRunPct),
  );
  row(
    "  waited for a CPU per wake-up (ms)",
    names.map((n) => phases[n]!.gatewayWaitPerRunMs.toFixed(3)),
  );
  if (streamGateway)
    row(
      "streams' gateway CPU (% of one core)",
      names.map((n) => phases[n]!.streamGatewayCpuPct ?? ""),
    );
  const result = { flags: opts, phases };
  console.log(JSON.stringify(result));
  if (opts.json) await fs.writeFile(opts.json, JSON.stringify(result, null, 2) + "\n");
  await raw.close();
  await ws.close();
} catch (error) {
  console.error(`bench failed: ${(error as Error).stack ?? error}`);
  exitCode = 1;
} finally {
  await cleanup();
}
process.exit(exitCode);
