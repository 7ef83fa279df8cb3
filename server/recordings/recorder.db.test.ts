/**
 * The recorder on the embedded PostgreSQL alone (no machines): several recorders (as several
 * server processes) fed overlapping views of one holder log record every byte exactly once; a
 * reboot continues the recording; the per-session limit truncates; retention deletes. The
 * end-to-end proof over real sshd hosts and the gateway is recording.test.ts.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import type { Db } from "../db/client";
import { castOutput } from "../testing/cast";
import { startTestDb } from "../testing/test-db";
import { buildCast, CAST_PAGE_ROWS, castLines, castText, loadCast } from "./asciicast";
import type { ChunkEvent } from "./recorder";
import { GAP_WAIT_MS, pruneRecordings, splitEvents, TerminalRecorder } from "./recorder";

let db: Db;
let stop: () => Promise<void>;
let learners = 0;

beforeAll(async () => {
  ({ db, stop } = await startTestDb());
}, 60_000);

afterAll(async () => {
  await stop?.();
});

/** Two recorders (as two server processes) and their taps on one terminal. */
function twoProcesses(sessionId: string, machine: string) {
  const make = () => new TerminalRecorder(db, { maxSessionBytes: 1024 * 1024, retentionDays: 30 });
  const [a, b] = [make(), make()];
  return { a, b, ta: a.tap(sessionId, machine), tb: b.tap(sessionId, machine) };
}

async function session(): Promise<string> {
  return (await db.labSession.create({ data: { labSlug: "rec", learnerId: `rec-learner-${++learners}`, provider: "static" } })).id;
}

it("three processes reading overlapping parts of one log write each byte once, in order", async () => {
  const id = await session();
  const log = Buffer.from(Array.from({ length: 3000 }, (_, i) => `line ${i} 日本語\n`).join(""));
  const recorders = [0, 1, 2].map(() => new TerminalRecorder(db, { maxSessionBytes: 64 * 1024 * 1024, retentionDays: 30 }));
  // Each "process" attaches at a different point (a takeover repaints a tail) and reads in its own piece sizes.
  const starts = [0, 5000, 20000];
  const sizes = [997, 4096, 333];
  const taps = recorders.map((r) => r.tap(id, "node01"));
  for (const tap of taps) tap.resize(100, 30);
  // The first process made the recording at its first output before the others attached, as
  // whoever attaches later finds it (the row starts where its first writer's bytes start).
  taps[0]!.output("boot-1", 0, log.subarray(0, sizes[0]));
  await recorders[0]!.flushAll();
  await Promise.all(
    recorders.map(async (r, i) => {
      const tap = taps[i]!;
      for (let at = i === 0 ? sizes[0]! : starts[i]!; at < log.length; at += sizes[i]!) {
        tap.output("boot-1", at, log.subarray(at, at + sizes[i]!));
        if (at % 7 === 0) await r.flushAll();
      }
      await r.flushAll();
    }),
  );
  const cast = await loadCast(db, id, "node01", []);
  expect(Buffer.from(castOutput(castText(cast!))).equals(log)).toBe(true);
  expect(cast!.header).toMatchObject({ version: 2, width: 100, height: 30 });
  const row = await db.terminalRecording.findUniqueOrThrow({ where: { sessionId_machine: { sessionId: id, machine: "node01" } } });
  expect(row.bytes).toBe(log.length);
  expect(Number(row.holderEnd)).toBe(log.length);
});

it("a process that writes ahead of another's unwritten buffer waits for it; a gap nobody fills is accepted after GAP_WAIT_MS", async () => {
  const id = await session();
  const { a, b, ta, tb } = twoProcesses(id, "node01");
  ta.output("boot-1", 0, Buffer.from("0123"));
  await a.flushAll();
  // B attached later (at offset 8) and writes first; A still holds 4..8 in its buffer.
  tb.output("boot-1", 8, Buffer.from("89"));
  const ahead = b.flushAll();
  ta.output("boot-1", 4, Buffer.from("4567"));
  await a.flushAll();
  await ahead;
  expect(castOutput(castText((await loadCast(db, id, "node01", []))!))).toBe("0123456789");
  const started = Date.now();
  tb.output("boot-1", 20, Buffer.from("KL")); // 10..20: nobody read these
  await b.flushAll();
  expect(Date.now() - started).toBeGreaterThanOrEqual(GAP_WAIT_MS - 50);
  expect(castOutput(castText((await loadCast(db, id, "node01", []))!))).toBe("0123456789KL");
});

it("a reboot (new boot id, offsets from 0) continues the recording", async () => {
  const id = await session();
  const r = new TerminalRecorder(db, { maxSessionBytes: 1024 * 1024, retentionDays: 30 });
  const tap = r.tap(id, "node02");
  tap.output("boot-1", 0, Buffer.from("before reboot\r\n"));
  await r.flushAll();
  tap.output("boot-2", 0, Buffer.from("after reboot\r\n"));
  await r.flushAll();
  expect(castOutput(castText((await loadCast(db, id, "node02", []))!))).toBe("before reboot\r\nafter reboot\r\n");
});

it("records a notice the viewers were shown as the same line, framed by line breaks, and a marker named by its key, before the output after it", async () => {
  const id = await session();
  const r = new TerminalRecorder(db, { maxSessionBytes: 1024 * 1024, retentionDays: 30 });
  const tap = r.tap(id, "controlplane#2");
  tap.output("boot-1", 0, Buffer.from("root@cp:~# reboot\r\nroot@cp:~# "));
  tap.notice("rebooted"); // shown while no output came: it waits for the next byte
  tap.notice("reconnected");
  await r.flushAll();
  tap.output("boot-2", 0, Buffer.from("root@cp:~# "));
  await r.flushAll();
  const cast = (await loadCast(db, id, "controlplane#2", []))!;
  expect(castOutput(castText(cast))).toBe(
    "root@cp:~# reboot\r\nroot@cp:~# \r\n[controlplane が再起動されました。新しいシェルです]\r\n\r\n[controlplane に再接続しました]\r\nroot@cp:~# ",
  );
  expect(cast.events.map((e) => e[1])).toEqual(["o", "o", "m", "o", "m", "o"]);
  expect(cast.events.filter((e) => e[1] === "m").map((e) => e[2])).toEqual(["rebooted", "reconnected"]);
  const row = await db.terminalRecording.findUniqueOrThrow({ where: { sessionId_machine: { sessionId: id, machine: "controlplane#2" } } });
  expect(row.bytes).toBe(Buffer.byteLength("root@cp:~# reboot\r\nroot@cp:~# root@cp:~# ")); // a notice is no output byte
});

it("a notice two processes showed before the same byte is recorded once; one shown during a catch-up comes after the caught-up bytes", async () => {
  const id = await session();
  const { a, b, ta, tb } = twoProcesses(id, "node01");
  ta.output("boot-1", 0, Buffer.from("old "));
  await a.flushAll();
  for (const tap of [ta, tb]) tap.notice("rebooted");
  tb.output("boot-2", 0, Buffer.from("new "));
  await b.flushAll();
  ta.output("boot-2", 0, Buffer.from("new more "));
  await a.flushAll();
  // Process B comes back to the log after a gap: the catch-up reads what no process read, and
  // the notice it showed on attaching goes after those bytes, before the live output.
  let release!: () => void;
  const reading = new Promise<void>((resolve) => (release = resolve));
  tb.catchUp("boot-2", async (from, sink) => {
    await reading;
    sink(from, Buffer.from("away "));
  });
  tb.notice("reconnected");
  tb.output("boot-2", 14, Buffer.from("live"));
  release();
  await expect.poll(async () => (await b.flushAll(), castOutput(castText((await loadCast(db, id, "node01", []))!)))).toContain("live");
  expect(castOutput(castText((await loadCast(db, id, "node01", []))!))).toBe(
    "old \r\n[node01 が再起動されました。新しいシェルです]\r\nnew more away \r\n[node01 に再接続しました]\r\nlive",
  );
});

it("streams a row that has the offset of a resize-only row before it when that one ends a page", async () => {
  const id = await session();
  const recording = await db.terminalRecording.create({
    data: { sessionId: id, machine: "node01", bootId: "b", holderEnd: 0n }, // started now: the retention test leaves it
  });
  // Rows as the recorder writes them: output, then a resize no output followed within a flush
  // (no bytes: the same offset as the next row), ending the first page.
  const data = Array.from({ length: CAST_PAGE_ROWS - 1 }, (_, i) => ({
    offset: i,
    events: [[i, "o", 1]],
    data: new Uint8Array([0x61 + i]),
  }));
  await db.recordingChunk.createMany({
    data: [
      ...data.map((r) => ({ recordingId: recording.id, ...r })),
      { recordingId: recording.id, offset: CAST_PAGE_ROWS - 1, events: [[100, "r", "90x20"]], data: new Uint8Array() },
      { recordingId: recording.id, offset: CAST_PAGE_ROWS - 1, events: [[101, "o", 1]], data: new Uint8Array([0x5a]) },
    ],
  });
  const letters = data.map((r) => String.fromCharCode(r.data[0]!)).join("");
  expect(castOutput(castText((await loadCast(db, id, "node01", []))!))).toBe(`${letters}Z`);
});

it("replays a notice key it does not know as nothing (a newer process wrote it)", () => {
  const cast = buildCast(
    new Date(0),
    [
      {
        events: [
          [1000, "o", 2],
          [1500, "n", "somethingNew" as never],
          [2000, "o", 2],
        ],
        data: Buffer.from("abcd"),
      },
    ],
    [],
  );
  expect(cast.events).toEqual([
    [1, "o", "ab"],
    [2, "o", "cd"],
  ]);
});

it("stops at the per-session limit over all machines and marks the recording truncated", async () => {
  const id = await session();
  const r = new TerminalRecorder(db, { maxSessionBytes: 100_000, retentionDays: 30 });
  r.tap(id, "a").output("b", 0, Buffer.alloc(60_000, 0x61));
  await r.flushAll();
  r.tap(id, "b").output("b", 0, Buffer.alloc(60_000, 0x62));
  await r.flushAll();
  r.tap(id, "b").output("b", 60_000, Buffer.alloc(10, 0x62));
  await r.flushAll();
  const rows = await db.terminalRecording.findMany({ where: { sessionId: id }, orderBy: { machine: "asc" } });
  expect(rows.map((x) => [x.machine, x.bytes, x.truncated])).toEqual([
    ["a", 60_000, false],
    ["b", 40_000, true],
  ]);
});

it("retention deletes recordings older than the setting, with their chunks", async () => {
  const id = await session();
  const r = new TerminalRecorder(db, { maxSessionBytes: 1024 * 1024, retentionDays: 30 });
  r.tap(id, "old").output("b", 0, Buffer.from("x"));
  await r.flushAll();
  const day = 24 * 60 * 60 * 1000;
  expect(await pruneRecordings(db, 30, Date.now() + 29 * day)).toBe(0);
  expect(await pruneRecordings(db, 30, Date.now() + 31 * day)).toBeGreaterThanOrEqual(1);
  expect(await db.terminalRecording.count({ where: { sessionId: id } })).toBe(0);
  expect(await db.recordingChunk.count({ where: { recording: { sessionId: id } } })).toBe(0);
});

it("splits events at byte positions and keeps a split UTF-8 character whole", () => {
  expect(
    splitEvents(
      [
        [1, "o", 4],
        [2, "r", "80x24"],
        [3, "o", 4],
      ],
      2,
      6,
      false,
    ),
  ).toEqual([
    [1, "o", 2],
    [2, "r", "80x24"],
    [3, "o", 2],
  ]);
  const text = Buffer.from("あい");
  const cast = buildCast(
    new Date(0),
    [
      { events: [[1000, "o", 2]], data: text.subarray(0, 2) },
      { events: [[2000, "o", 4]], data: text.subarray(2) },
    ],
    [{ at: new Date(1500), kind: "step", stepId: "s", title: "S" }],
  );
  expect(cast.events).toEqual([
    [1.5, "m", "✓ S"],
    [2, "o", "あい"],
  ]);
});

it("streams a recording of many rows a page at a time, line for line what the whole-recording build gives (resizes, markers, a UTF-8 character split between pages)", async () => {
  const id = await session();
  const startedAt = new Date(1_700_000_000_000);
  const recording = await db.terminalRecording.create({
    data: { sessionId: id, machine: "node01", startedAt, bootId: "b", holderEnd: 0n },
  });
  const rows: { offset: number; events: ChunkEvent[]; data: Buffer }[] = [];
  let offset = 0;
  for (let i = 0; i < CAST_PAGE_ROWS * 3 + 5; i++) {
    // Row i ends with the first bytes of "語" and row i+1 starts with the rest, across page boundaries too.
    const text = Buffer.concat([
      i === 0 ? Buffer.alloc(0) : Buffer.from("語").subarray(1),
      Buffer.from(`row ${i} `),
      Buffer.from("語").subarray(0, 1),
    ]);
    const t = startedAt.getTime() + i * 1000;
    const events: ChunkEvent[] =
      i % 10 === 3
        ? [
            [t, "r", `${80 + i}x24`],
            [t, "o", text.length],
          ]
        : [[t, "o", text.length]];
    rows.push({ offset, events, data: text });
    offset += text.length;
  }
  rows[0]!.events.unshift([startedAt.getTime(), "r", "100x30"]);
  await db.recordingChunk.createMany({
    data: rows.map((r) => ({ recordingId: recording.id, offset: r.offset, events: r.events, data: new Uint8Array(r.data) })),
  });
  const markers = [5, 17, 33, 60].map((n) => ({
    at: new Date(startedAt.getTime() + n * 1000 + 500),
    kind: "step" as const,
    stepId: `s${n}`,
    title: `Step ${n}`,
  }));

  const lines = (await castLines(db, id, "node01", markers, "t"))!;
  let streamed = "";
  let pieces = 0;
  for await (const piece of lines) {
    streamed += piece;
    pieces++;
  }
  const whole = castText(buildCast(startedAt, rows, markers, "t"));
  expect(streamed).toBe(whole);
  expect(pieces).toBeGreaterThan(3); // header, then a piece per row: not one string at the end
  expect(whole).toContain('"m","✓ Step 60"');
  expect(whole).toContain('"r","93x24"');
  expect(await castLines(db, id, "node02", [])).toBeNull();
});
