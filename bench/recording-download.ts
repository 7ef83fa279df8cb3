/**
 * What serving a full recording costs the other terminals of the process: a recording filled to
 * the per-session limit (64 MiB of printed output, server/testing/recording-fill.ts) in the
 * embedded PostgreSQL, served by the real download (server/recordings/download.ts) from an HTTP
 * server in this process, written to the socket as Next.js writes a route's body (waiting for
 * 'drain'). A child process (bench/lib/download-load.ts) pings a WebSocket echo on the same server
 * every 20 ms, a terminal's keystroke and echo without the machine, and runs the downloads.
 *
 * Prints per phase, in the same run: with no download (the baseline), one download, four at once:
 * echo round trip and this process's event-loop delay (p50/p99/max, beyond a 10 ms timer's), its
 * RSS peak (sampled every 50 ms), and each download's time. No root needed.
 *
 *   npx tsx bench/recording-download.ts [--mib 64] [--idle-s 5]
 */
import { once } from "node:events";
import http from "node:http";
import { fork, type ChildProcess } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { monitorEventLoopDelay } from "node:perf_hooks";
import { WebSocketServer } from "ws";
import { z } from "zod";
import type { Db } from "../server/db/client";
import { castResponse } from "../server/recordings/download";
import { startTestDb } from "../server/testing/test-db";
import { benchFlags } from "./lib/flags";
import { MIB, stats } from "./lib/measure";

const Flags = z.object({
  mib: z.coerce.number().int().min(1).max(64).default(64),
  "idle-s": z.coerce.number().int().min(1).max(60).default(5),
});
const CHILD_SCRIPT = path.join(path.dirname(fileURLToPath(import.meta.url)), "lib", "download-load.ts");
const MACHINE = "node01";
const USER = "bench-learner";
/** Timer of the event-loop delay histogram, ms; it records each interval, so the delay is that less this. */
const LOOP_RESOLUTION_MS = 10;
/** RSS sampling interval, ms. */
const RSS_EVERY_MS = 50;

interface PhaseReply {
  echoMs: number[];
  downloadMs: number[];
  bytes: number;
  refused: number;
  error?: string;
}

/** Serves the cast at /cast as a Next.js route handler would be served, and an echo at /echo. */
function startServer(db: Db, sessionId: string): http.Server {
  const server = http.createServer((req, res) => {
    const client = new AbortController();
    res.on("close", () => client.abort());
    const request = new Request(`http://bench${req.url}`, { signal: client.signal });
    void (async () => {
      const answer = await castResponse(db, request, USER, { sessionId, machine: MACHINE, markers: [], title: "bench" });
      res.writeHead(answer.status, Object.fromEntries(answer.headers));
      const reader = answer.body!.getReader();
      res.on("close", () => void reader.cancel().catch(() => undefined));
      for (let next = await reader.read(); !next.done; next = await reader.read()) {
        if (!res.write(next.value)) await once(res, "drain");
      }
      res.end();
    })().catch((error: Error) => {
      console.error(error);
      res.destroy();
    });
  });
  const wss = new WebSocketServer({ server, path: "/echo" });
  wss.on("connection", (ws) => ws.on("message", (data, binary) => ws.send(data, { binary })));
  return server;
}

function ask<T>(child: ChildProcess, order: unknown): Promise<T> {
  return new Promise((resolve, reject) => {
    child.once("message", (reply: T & { error?: string }) => (reply.error ? reject(new Error(reply.error)) : resolve(reply)));
    child.send(order as object);
  });
}

async function measure(child: ChildProcess, base: string, downloads: number, idleMs: number) {
  const loop = monitorEventLoopDelay({ resolution: LOOP_RESOLUTION_MS });
  let rssPeak = process.memoryUsage.rss();
  const sampler = setInterval(() => (rssPeak = Math.max(rssPeak, process.memoryUsage.rss())), RSS_EVERY_MS);
  loop.enable();
  const reply = await ask<PhaseReply>(child, {
    phase: { url: `${base}/cast`, echoUrl: `${base.replace("http", "ws")}/echo`, downloads, idleMs },
  });
  loop.disable();
  clearInterval(sampler);
  rssPeak = Math.max(rssPeak, process.memoryUsage.rss());
  const ms = (ns: number) => Math.max(0, Math.round(ns / 1e4 - LOOP_RESOLUTION_MS * 100) / 100);
  return {
    echo: stats(reply.echoMs),
    loop: { p50: ms(loop.percentile(50)), p99: ms(loop.percentile(99)), max: ms(loop.max) },
    rssMiB: Math.round(rssPeak / MIB),
    downloadS: reply.downloadMs.map((t) => Math.round(t / 100) / 10),
    mib: Math.round(reply.bytes / MIB),
    refused: reply.refused,
  };
}

async function main(): Promise<void> {
  const flags = benchFlags(Flags, "usage: npx tsx bench/recording-download.ts [--mib 64] [--idle-s 5]");
  const { db, url, stop } = await startTestDb();
  const child = fork(CHILD_SCRIPT, [], { execArgv: ["--import", "tsx"], stdio: ["ignore", "inherit", "inherit", "ipc"] });
  let server: http.Server | null = null;
  try {
    const sessionId = (await db.labSession.create({ data: { labSlug: "bench", learnerId: USER, provider: "static" } })).id;
    server = startServer(db, sessionId);
    let t = performance.now();
    await ask(child, { fill: { databaseUrl: url, sessionId, machine: MACHINE, bytes: flags.mib * MIB } });
    console.log(`filled a recording of ${flags.mib} MiB in ${Math.round(performance.now() - t) / 1000} s`);
    server.listen(0, "127.0.0.1");
    await once(server, "listening");
    const base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
    t = performance.now();
    const rows = [
      { phase: "no download (baseline)", ...(await measure(child, base, 0, flags["idle-s"] * 1000)) },
      { phase: "1 download", ...(await measure(child, base, 1, 0)) },
      { phase: "4 downloads at once", ...(await measure(child, base, 4, 0)) },
    ];
    console.log(`node ${process.version}, ${flags.mib} MiB of output; echo every 20 ms; ms unless said`);
    console.table(
      rows.map((r) => ({
        phase: r.phase,
        "echo p50": r.echo.p50,
        "echo p99": r.echo.p99,
        "echo max": r.echo.max,
        "loop p50": r.loop.p50,
        "loop p99": r.loop.p99,
        "loop max": r.loop.max,
        "RSS peak MiB": r.rssMiB,
        "download s": r.downloadS.join(" ") || "-",
        "cast MiB": r.mib,
      })),
    );
    console.log(`process max RSS ${Math.round(process.resourceUsage().maxRSS / 1024)} MiB; ${Math.round(performance.now() - t) / 1000} s`);
  } finally {
    child.kill();
    server?.close();
    await stop();
  }
}

void main().then(
  () => process.exit(0),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
