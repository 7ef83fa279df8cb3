/**
 * Child process of bench/recording-download.ts: everything that is not the server, so its own work
 * never shows in the server's event loop. It fills the recording, pings the server's WebSocket echo
 * (a terminal's keystroke and echo, without the machine) and runs downloads, on the parent's
 * orders over IPC:
 *   { fill: { databaseUrl, sessionId, machine, bytes } }  -> { filled: true }
 *   { phase: { url, downloads, idleMs } }                 -> { echoMs: number[], downloadMs: number[], bytes: number, refused: number }
 */
import WebSocket from "ws";
import { createDb } from "../../server/db/client";
import { fillRecording } from "../../server/testing/recording-fill";

/** Time between two echo pings, ms (one in flight at a time). */
const ECHO_EVERY_MS = 20;

type Order =
  | { fill: { databaseUrl: string; sessionId: string; machine: string; bytes: number } }
  | { phase: { url: string; echoUrl: string; downloads: number; idleMs: number } };

async function fill(order: Extract<Order, { fill: unknown }>["fill"]): Promise<void> {
  const db = createDb(order.databaseUrl);
  try {
    await fillRecording(db, order.sessionId, order.machine, order.bytes);
  } finally {
    await db.$disconnect();
  }
}

/** Echo round trips while `work` runs, ms. */
async function echoDuring(echoUrl: string, work: () => Promise<void>): Promise<number[]> {
  const ws = new WebSocket(echoUrl);
  await new Promise((resolve, reject) => ws.once("open", resolve).once("error", reject));
  const rtts: number[] = [];
  let sentAt = 0;
  let running = true;
  ws.on("message", () => {
    rtts.push(performance.now() - sentAt);
    if (running) setTimeout(ping, ECHO_EVERY_MS);
  });
  const ping = () => {
    sentAt = performance.now();
    ws.send("k");
  };
  ping();
  try {
    await work();
  } finally {
    running = false;
    ws.close();
  }
  return rtts;
}

/** Reads one download to its end: its time in ms and size, or null when it was refused. */
async function download(url: string): Promise<{ ms: number; bytes: number } | null> {
  const started = performance.now();
  const res = await fetch(url);
  if (res.status !== 200) {
    await res.body?.cancel();
    return null;
  }
  let bytes = 0;
  const reader = res.body!.getReader();
  for (let next = await reader.read(); !next.done; next = await reader.read()) bytes += next.value.byteLength;
  return { ms: performance.now() - started, bytes };
}

async function phase(order: Extract<Order, { phase: unknown }>["phase"]) {
  const results: ({ ms: number; bytes: number } | null)[] = [];
  const echoMs = await echoDuring(order.echoUrl, async () => {
    if (order.downloads === 0) await new Promise((r) => setTimeout(r, order.idleMs));
    else results.push(...(await Promise.all(Array.from({ length: order.downloads }, () => download(order.url)))));
  });
  const done = results.filter((r) => r !== null);
  return {
    echoMs,
    downloadMs: done.map((r) => r.ms),
    bytes: done.reduce((sum, r) => sum + r.bytes, 0),
    refused: results.length - done.length,
  };
}

process.on("message", (order: Order) => {
  const run = "fill" in order ? fill(order.fill).then(() => ({ filled: true })) : phase(order.phase);
  run.then(
    (reply) => process.send!(reply),
    (error: Error) => process.send!({ error: error.stack ?? error.message }),
  );
});
