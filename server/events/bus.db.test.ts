/**
 * The event bus across server processes: two buses (as two processes would hold) on one real
 * PostgreSQL. What one publishes reaches the other's subscribers with data loaded where they
 * are; the LISTEN connection recovers from being killed and makes subscribers reload; watchers
 * attached through two processes add up, and a dead process's rows stop counting.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { WatchRegistry, PRESENCE_GRACE_MS } from "../cohorts/watchers";
import type { Db } from "../db/client";
import type { Progress } from "../grader/progress";
import { log } from "../log";
import { startTestDb } from "../testing/test-db";
import { EVENTS_CHANNEL, EventBus, type EventSources } from "./bus";

let db: Db;
let url: string;
let stop: () => Promise<void>;
const buses: EventBus[] = [];

beforeAll(async () => {
  ({ db, url, stop } = await startTestDb());
}, 60_000);
afterAll(async () => {
  for (const bus of buses) await bus.stop();
  await stop?.();
});

/** A bus whose progress for a session is "loaded" from a counter, so each delivery is visible. */
async function process(name: string, watchers?: (id: string) => Promise<string[]>) {
  const loads: string[] = [];
  const sources: EventSources = {
    progress: async (sessionId) => {
      loads.push(sessionId);
      return { sessionId, loadedBy: name } as unknown as Progress;
    },
    watchers: watchers ?? (async () => []),
  };
  const bus = new EventBus({ db, databaseUrl: url, log });
  buses.push(bus);
  await bus.start(sources);
  return { bus, loads };
}

describe("event bus over LISTEN/NOTIFY", () => {
  it("a notice published by process A reaches process B's subscriber, loaded by B, only where subscribed", async () => {
    const a = await process("A");
    const b = await process("B");
    const seen: unknown[] = [];
    const changes: (string | null)[] = [];
    b.bus.onProgress("s1", (p) => seen.push(p));
    b.bus.onAnySessionChange((id) => changes.push(id));
    const started = Date.now();
    await a.bus.publishProgress("s1");
    await expect.poll(() => seen.length).toBe(1);
    const latencyMs = Date.now() - started;
    expect(seen[0]).toEqual({ sessionId: "s1", loadedBy: "B" });
    expect(changes).toContain("s1");
    // A has no subscriber for s1: it loaded nothing. B loads nothing for sessions nobody watches.
    expect(a.loads).toEqual([]);
    // Warm latency (connections open): publish on A to the subscriber's callback on B.
    const delivered = new Promise<number>((resolve) => {
      const t0 = performance.now();
      const off = b.bus.onProgress("s4", () => (off(), resolve(performance.now() - t0)));
      void a.bus.publishProgress("s4");
    });
    console.log(`event bus: warm A publish -> B subscriber (with B's load) in ${(await delivered).toFixed(1)} ms`);
    await a.bus.publishProgress("s2");
    await a.bus.publishSessionChange("s3");
    await expect.poll(() => changes).toEqual(expect.arrayContaining(["s2", "s3"]));
    expect(b.loads).toEqual(["s1", "s4"]);
    console.log(`event bus: A publish -> B subscriber in ${latencyMs} ms`);
  });

  it("a burst of notices for one session is folded into a few loads (not one per notice)", async () => {
    const a = await process("A");
    const b = await process("B");
    const seen: unknown[] = [];
    let after = false;
    b.bus.onProgress("burst", (p) => seen.push(p));
    b.bus.onProgress("after-burst", () => (after = true));
    await Promise.all(Array.from({ length: 20 }, () => a.bus.publishProgress("burst")));
    // Notices arrive in commit order: once B has loaded one published after the burst, every
    // notice of the burst has reached it (and the burst's wait to gather, which started first, is over).
    await a.bus.publishProgress("after-burst");
    await expect.poll(() => after).toBe(true);
    // Then the burst's last load has delivered: each load is one delivery.
    const burstLoads = () => b.loads.filter((id) => id === "burst").length;
    await expect.poll(() => seen.length === burstLoads()).toBe(true);
    expect(seen.length).toBeGreaterThan(0);
    // Two when the burst comes in one read; a few when a busy host spreads it out; 20 unfolded.
    expect(burstLoads()).toBeLessThanOrEqual(10);
  });

  it("ignores malformed notices and oversized ids without losing the connection", async () => {
    const b = await process("B");
    const seen: unknown[] = [];
    b.bus.onProgress("ok", (p) => seen.push(p));
    for (const payload of [
      "not json",
      "{}",
      JSON.stringify({ k: "nope", s: "ok" }),
      JSON.stringify({ k: "progress", s: "x".repeat(500) }),
    ]) {
      await db.$executeRaw`SELECT pg_notify(${EVENTS_CHANNEL}, ${payload})`;
    }
    await db.$executeRaw`SELECT pg_notify(${EVENTS_CHANNEL}, ${JSON.stringify({ k: "progress", s: "ok" })})`;
    await expect.poll(() => seen.length).toBe(1);
    expect(b.loads).toEqual(["ok"]);
  });

  it("recovers when its LISTEN connection is killed, and subscribers reload", async () => {
    const a = await process("A");
    const b = await process("B");
    const seen: unknown[] = [];
    const changes: (string | null)[] = [];
    b.bus.onProgress("r1", (p) => seen.push(p));
    b.bus.onAnySessionChange((id) => changes.push(id));
    await db.$queryRaw`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'labdeck-events'`;
    // Every bus reconnects; B's subscribers reload (a progress load and a null "reload all").
    await expect.poll(() => seen.length, { timeout: 15_000 }).toBeGreaterThan(0);
    await expect.poll(() => changes).toContain(null);
    const before = seen.length;
    await a.bus.publishProgress("r1");
    await expect.poll(() => seen.length, { timeout: 15_000 }).toBeGreaterThan(before);
  });
});

describe("watchers across processes", () => {
  it("adds up viewers attached through two processes; a dead process's rows stop counting", async () => {
    const owner = await db.user.create({ data: { id: "bus-owner", email: "bus-owner@x.test", name: "owner" } });
    const t1 = await db.user.create({ data: { id: "bus-t1", email: "bus-t1@x.test", name: "teacher1", role: "instructor" } });
    const t2 = await db.user.create({ data: { id: "bus-t2", email: "bus-t2@x.test", name: "teacher2", role: "instructor" } });
    const s = await db.labSession.create({ data: { learnerId: owner.id, labSlug: "hello-terminal", provider: "static", state: "ready" } });
    let registryA: WatchRegistry | null = null;
    let registryB: WatchRegistry | null = null;
    const a = await process("A", (id) => registryA!.watchers(id));
    const b = await process("B", (id) => registryB!.watchers(id));
    registryA = new WatchRegistry({ db, bus: a.bus });
    registryB = new WatchRegistry({ db, bus: b.bus });
    // The learner's page is served by process B; the instructors watch through A and B.
    const notices: (readonly string[])[] = [];
    b.bus.onWatchers(s.id, (names) => notices.push(names));
    registryA.onViewer({ sessionId: s.id, machine: "node01", mode: "read", userId: t1.id, attached: true });
    await expect.poll(() => notices.at(-1)).toEqual(["teacher1"]);
    registryB.onViewer({ sessionId: s.id, machine: "node02", mode: "read", userId: t2.id, attached: true });
    await expect.poll(() => notices.at(-1)).toEqual(["teacher1", "teacher2"]);
    expect(await registryB.watchers(s.id)).toEqual(["teacher1", "teacher2"]);
    // Process A dies without a clean stop: its row ages past the grace and stops counting.
    await db.watchPresence.updateMany({
      where: { processId: registryA.processId },
      data: { seenAt: new Date(Date.now() - PRESENCE_GRACE_MS - 1000) },
    });
    expect(await registryB.watchers(s.id)).toEqual(["teacher2"]);
    // A clean stop removes the process's rows and tells the learner at once.
    await registryB.stop();
    await expect.poll(() => notices.at(-1)).toEqual([]);
    expect(await db.watchPresence.count({ where: { processId: registryB.processId } })).toBe(0);
  });
});
