/**
 * The gateway's headless screen (real @xterm/headless, a scripted clock): what it parses as it
 * comes and what it leaves to a rebuild from the replay buffer.
 */
import { describe, expect, it } from "vitest";
import {
  parseCost,
  Screen,
  SCREEN_LINE_FEED_COST,
  SCREEN_PARSE_BURST_BYTES,
  SCREEN_PARSE_BYTES_PER_S,
  SCREEN_PARSE_FREE_BYTES,
  SCREEN_PARSE_SHARED_BURST_BYTES,
} from "./screen";

const size = { cols: 80, rows: 24 };
const lines = (from: number, count: number) => Buffer.from(Array.from({ length: count }, (_, i) => `line-${from + i}\r\n`).join(""));

describe("Screen parse budget", () => {
  it("keeps parsing output that comes at a human or apt-get pace (within SCREEN_PARSE_BYTES_PER_S)", async () => {
    let t = 0;
    const screen = new Screen(size, 0, () => t);
    let offset = 0;
    // 60 s of 2 KiB every 100 ms: 20 KiB/s, a third of the budget.
    for (let i = 0; i < 600; i++) {
      const chunk = lines(i * 100, 100).subarray(0, 2048);
      screen.write(offset, chunk);
      offset += chunk.byteLength;
      t += 100;
    }
    expect(SCREEN_PARSE_BYTES_PER_S).toBeGreaterThan(20 * 1024);
    expect(screen.stale).toBe(false);
    const snap = await screen.snapshot();
    expect(snap.offset).toBe(offset);
    screen.dispose();
  });

  it("stops parsing a flood once its burst is spent (stale), and a rebuild from the held bytes shows the latest screen", async () => {
    const t = 0;
    const screen = new Screen(size, 0, () => t);
    let offset = 0;
    const held: Buffer[] = [];
    for (let i = 0; offset <= SCREEN_PARSE_BURST_BYTES + 64 * 1024; i++) {
      const chunk = lines(i * 1000, 1000); // ~11 KiB, all within the same millisecond
      screen.write(offset, chunk);
      held.push(chunk);
      offset += chunk.byteLength;
    }
    expect(screen.stale).toBe(true);
    expect(screen.endOffset).toBe(offset);
    // The terminal rebuilds from its replay buffer before a snapshot (terminal.ts).
    const keep = held.slice(-3);
    const start = offset - keep.reduce((n, c) => n + c.byteLength, 0);
    screen.rebuild(start, keep);
    expect(screen.stale).toBe(false);
    const snap = await screen.snapshot();
    expect(snap.offset).toBe(offset);
    const last = `line-${(held.length - 1) * 1000 + 999}`;
    expect(snap.data).toContain(last);
    screen.dispose();
  });

  it("shares one budget among the process's flooding screens: 20 floods starting at once parse one shared burst, not 20, and a terminal typed in beside them stays parsed", async () => {
    let t = 0;
    const clock = () => t;
    const floods = Array.from({ length: 20 }, () => new Screen(size, 0, clock));
    const typed = new Screen(size, 0, clock);
    const chunk = lines(0, 18_000).subarray(0, 96 * 1024); // a flood's first 96 KiB, all at once
    expect(parseCost(chunk)).toBeLessThan(SCREEN_PARSE_BURST_BYTES); // within one screen's own burst
    for (const screen of floods) screen.write(0, chunk);
    const parsed = floods.filter((screen) => !screen.stale).length;
    expect(parsed).toBe(Math.floor(SCREEN_PARSE_SHARED_BURST_BYTES / parseCost(chunk)));
    expect(parsed).toBeGreaterThan(0);
    let offset = 0;
    for (let i = 0; i < 50; i++) {
      const keys = Buffer.from(`echo ${i}\r\n${i}\r\n$ `);
      typed.write(offset, keys);
      offset += keys.byteLength;
      t += 200;
    }
    expect(typed.stale).toBe(false);
    expect((await typed.snapshot()).data).toContain("49");
    for (const screen of [...floods, typed]) screen.dispose();
  });

  it("20 floods starting at once in small chunks (SSH packets) parse little of their own bursts before the shared budget: about 20 x SCREEN_PARSE_FREE_BYTES and one shared burst in all", async () => {
    const clock = () => 0; // a clock of its own: its own process-wide budget
    const floods = Array.from({ length: 20 }, () => new Screen(size, 0, clock));
    const chunk = Buffer.from("y\n".repeat(512)); // 1 KiB of `yes`, 9 KiB of parse cost
    let parsed = 0;
    for (let i = 0; i < 64; i++) {
      for (const screen of floods) {
        const wasStale = screen.stale;
        screen.write(i * chunk.byteLength, chunk);
        if (!wasStale && !screen.stale) parsed += parseCost(chunk);
      }
    }
    expect(floods.every((screen) => screen.stale)).toBe(true);
    // Half the burst each (the rule before) would be 20 x 128 KiB + the shared burst, ~3 MiB.
    expect(parsed).toBeLessThanOrEqual(20 * (SCREEN_PARSE_FREE_BYTES + parseCost(chunk)) + SCREEN_PARSE_SHARED_BURST_BYTES);
    for (const screen of floods) screen.dispose();
  });

  it("charges line feeds by what they cost the parser: 64 KiB of `yes` is over a screen's burst, 64 KiB of 60-character lines is not", async () => {
    const yes = Buffer.from("y\n".repeat(32 * 1024));
    const text = Buffer.from(`${"x".repeat(58)}\r\n`.repeat(1100)).subarray(0, 64 * 1024);
    expect(parseCost(yes)).toBe(yes.byteLength + 32 * 1024 * SCREEN_LINE_FEED_COST);
    expect(parseCost(Buffer.from("no line feed\r"))).toBe(13);
    const clock = () => 0;
    const flood = new Screen(size, 0, clock);
    flood.write(0, yes);
    expect(flood.stale).toBe(true);
    expect(flood.endOffset).toBe(yes.byteLength);
    flood.dispose();
    // A clock of its own: its own process-wide budget, untouched by the other tests.
    const typed = new Screen(size, 0, () => 0);
    typed.write(0, text);
    expect(typed.stale).toBe(false);
    expect((await typed.snapshot()).data).toContain("xxxxxxxx");
    typed.dispose();
  });

  it("refills with time: a burst, a pause of a few seconds, another burst stays parsed", async () => {
    let t = 0;
    const screen = new Screen(size, 0, () => t);
    const chunk = Buffer.alloc(SCREEN_PARSE_BURST_BYTES - 1024, "x");
    screen.write(0, chunk);
    expect(screen.stale).toBe(false);
    t += (SCREEN_PARSE_BURST_BYTES / SCREEN_PARSE_BYTES_PER_S) * 1000; // the bucket is full again
    screen.write(chunk.byteLength, chunk);
    expect(screen.stale).toBe(false);
    screen.write(2 * chunk.byteLength, chunk); // no time passed: over budget
    expect(screen.stale).toBe(true);
    screen.dispose();
  });
});
