/**
 * Recording downloads on the embedded PostgreSQL: a recording filled to many MiB streams byte for
 * byte as the whole-recording build gives it while the event loop keeps turning, and a user's
 * downloads at once are capped, a slot coming back when a client goes away.
 */
import { createHash } from "node:crypto";
import { afterAll, beforeAll, expect, it } from "vitest";
import type { Db } from "../db/client";
import { MAX_STREAMS_PER_USER, openStreams } from "../http/streams";
import { terminalNoticeText } from "../i18n/locale";
import { DEFAULT_LOCALE } from "../i18n/locales";
import { fillRecording } from "../testing/recording-fill";
import { startTestDb } from "../testing/test-db";
import { buildCast, castText, type RecordingMarker } from "./asciicast";
import { CAST_SLICE_BYTES, castResponse } from "./download";

/** Output bytes of the large recording: half the per-session limit, which the old build served in seconds of blocked event loop. */
const FILL_BYTES = 32 * 1024 * 1024;
/**
 * Longest gap between two ticks of a 10 ms interval allowed while it streams, ms: generous, for a
 * loaded machine (measured 85-185 ms under load 13). It catches only a gross regression: the build
 * that read pages of 16 rows through the model measured 844-1,010 ms here. What fails against that
 * build is the count of bytes handed out in one turn (5 MiB there; one slice here).
 */
const MAX_LOOP_GAP_MS = 1_000;

let db: Db;
let stop: () => Promise<void>;
let learners = 0;

beforeAll(async () => {
  ({ db, stop } = await startTestDb());
}, 60_000);

afterAll(async () => {
  await stop?.();
});

async function session(): Promise<{ id: string; learnerId: string }> {
  const learnerId = `download-learner-${++learners}`;
  return { id: (await db.labSession.create({ data: { labSlug: "rec", learnerId, provider: "static" } })).id, learnerId };
}

function get(signal?: AbortSignal): Request {
  return new Request("http://labdeck.test/api/sessions/s/recordings/node01", { signal });
}

/** Reads `body` to its end, handing each slice to `each`. */
async function readAll(body: ReadableStream<Uint8Array>, each: (slice: Uint8Array) => void): Promise<void> {
  const reader = body.getReader();
  for (let next = await reader.read(); !next.done; next = await reader.read()) each(next.value);
}

it("streams a recording of 32 MiB in slices, as the whole-recording build gives it, while the event loop keeps turning", async () => {
  const { id, learnerId } = await session();
  const { startedAt, rows } = await fillRecording(db, id, "node01", FILL_BYTES);
  const markers: RecordingMarker[] = [10, 2000, 60_000].map((ms, i) => ({
    at: new Date(startedAt.getTime() + ms),
    kind: "step",
    stepId: `s${i}`,
    title: `Step ${i}`,
  }));

  let last = performance.now();
  let maxGap = 0;
  const ticker = setInterval(() => {
    const now = performance.now();
    maxGap = Math.max(maxGap, now - last);
    last = now;
  }, 10);
  // Event-loop turns, counted by a chain of setImmediate, and the cast bytes that arrived in each.
  let turn = 0;
  let spinner = setImmediate(function spin() {
    turn++;
    spinner = setImmediate(spin);
  });
  let bytesInTurn = { turn: -1, bytes: 0 };
  let mostInOneTurn = 0;
  const hash = createHash("sha256");
  const slices: Buffer[] = [];
  let largest = 0;
  try {
    const res = await castResponse(db, get(), learnerId, { sessionId: id, machine: "node01", markers, title: "rec node01" });
    expect(res.status).toBe(200);
    await readAll(res.body!, (slice) => {
      hash.update(slice);
      slices.push(Buffer.from(slice));
      largest = Math.max(largest, slice.byteLength);
      bytesInTurn = { turn, bytes: (bytesInTurn.turn === turn ? bytesInTurn.bytes : 0) + slice.byteLength };
      mostInOneTurn = Math.max(mostInOneTurn, bytesInTurn.bytes);
    });
  } finally {
    clearInterval(ticker);
    clearImmediate(spinner);
  }
  expect(openStreams(learnerId, "recording")).toBe(0);
  expect(largest).toBeLessThanOrEqual(CAST_SLICE_BYTES);
  // A slice per turn (and the one queued ahead): the old build handed a page of rows, MiB, to one turn.
  expect(mostInOneTurn).toBeLessThanOrEqual(2 * CAST_SLICE_BYTES);
  expect(maxGap).toBeLessThan(MAX_LOOP_GAP_MS);

  const whole = castText(buildCast(startedAt, rows, markers, "rec node01", "node01"));
  expect(hash.digest("hex")).toBe(createHash("sha256").update(whole).digest("hex"));
  // Well-formed: a header, then one event per line, the output adding up to every byte printed.
  const lines = Buffer.concat(slices).toString("utf8").trimEnd().split("\n");
  expect(JSON.parse(lines[0]!)).toMatchObject({ version: 2, width: 120, height: 40, title: "rec node01" });
  const events = lines.slice(1).map((line) => JSON.parse(line) as [number, string, string]);
  expect(events.filter((e) => e[1] === "m").map((e) => e[2])).toEqual(["✓ Step 0", "✓ Step 1", "reconnected", "✓ Step 2"]);
  const printed = Buffer.concat(rows.map((r) => r.data));
  const output = events.filter((e) => e[1] === "o").map((e) => e[2]);
  expect(output.join("").replace(terminalNoticeText(DEFAULT_LOCALE, "reconnected", "node01"), "")).toBe(printed.toString("utf8"));
}, 180_000);

it("refuses a user's fifth download at once with 429 and gives a slot back when a client goes away", async () => {
  const { id, learnerId } = await session();
  await fillRecording(db, id, "node01", 2 * 1024 * 1024);
  const cast = { sessionId: id, machine: "node01", markers: [] };
  expect(MAX_STREAMS_PER_USER.recording).toBe(4);
  const clients = Array.from({ length: 4 }, () => new AbortController());
  const readers: ReadableStreamDefaultReader<Uint8Array>[] = [];
  // Held as a server holds a request while it answers (a Request's signal follows its client's only while it lives).
  const requests = clients.map((client) => get(client.signal));
  for (const request of requests) {
    const res = await castResponse(db, request, learnerId, cast);
    expect(res.status).toBe(200);
    const reader = res.body!.getReader();
    expect((await reader.read()).done).toBe(false); // started, and stalled: the client reads no more
    readers.push(reader);
  }
  expect(openStreams(learnerId, "recording")).toBe(4);

  const fifth = await castResponse(db, get(), learnerId, cast);
  expect(fifth.status).toBe(429);
  expect(((await fifth.json()) as { code: string }).code).toBe("tooManyRecordingStreams");
  // Another user's downloads and this user's event streams have caps of their own.
  const other = await castResponse(db, get(), "someone-else", cast);
  expect(other.status).toBe(200);
  await other.body!.cancel();
  expect(openStreams(learnerId, "events")).toBe(0);

  clients[0]!.abort();
  expect(openStreams(learnerId, "recording")).toBe(3);
  const again = await castResponse(db, get(), learnerId, cast);
  expect(again.status).toBe(200);
  // A download read to its end gives its slot back too, and so does a client that cancels.
  let size = 0;
  await readAll(again.body!, (slice) => (size += slice.byteLength));
  expect(size).toBeGreaterThan(2 * 1024 * 1024);
  expect(openStreams(learnerId, "recording")).toBe(3);
  for (const reader of readers) await reader.cancel();
  expect(openStreams(learnerId, "recording")).toBe(0);
  await expect(castResponse(db, get(), learnerId, { ...cast, machine: "node09" })).rejects.toMatchObject({ status: 404 });
  expect(openStreams(learnerId, "recording")).toBe(0);
});
