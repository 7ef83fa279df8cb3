import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { dbEpochStore, EPOCHS_KEPT, newEpochStartOffset, UNKNOWN_END_JUMP, type EpochRecord } from "./epochs";
import type { Db } from "../db/client";
import { startTestDb } from "../testing/test-db";

const known = (...records: [string, EpochRecord][]) => new Map(records);

describe("newEpochStartOffset", () => {
  it("starts a terminal's first log at 0", () => {
    expect(newEpochStartOffset(known(), null, undefined)).toBe(0);
    expect(newEpochStartOffset(known(), null, 500)).toBe(0);
  });

  it("follows the previous log's end when this process read it (a reboot it saw)", () => {
    expect(newEpochStartOffset(known(["b1/i1", { startOffset: 0, endLogOffset: null }]), { startOffset: 0, endLogOffset: 1234 }, 99)).toBe(
      1234,
    );
    expect(newEpochStartOffset(known(), { startOffset: 1000, endLogOffset: 24 }, undefined)).toBe(1024);
  });

  it("after a log no process saw begin: the latest recorded end, or the resuming viewer's offset when it is further", () => {
    const records = known(["b1/i1", { startOffset: 0, endLogOffset: 700 }], ["b2/i1", { startOffset: 700, endLogOffset: 300 }]);
    expect(newEpochStartOffset(records, null, undefined)).toBe(1000);
    expect(newEpochStartOffset(records, null, 1000)).toBe(1000);
    expect(newEpochStartOffset(records, null, 1200)).toBe(1200);
    expect(newEpochStartOffset(records, null, 400)).toBe(1000); // an old viewer: it gets a snapshot
  });

  it("jumps past any offset a viewer can hold when the latest earlier log's end was never recorded (its process was killed)", () => {
    const records = known(["b1/i1", { startOffset: 0, endLogOffset: 700 }], ["b2/i1", { startOffset: 700, endLogOffset: null }]);
    expect(newEpochStartOffset(records, null, 900)).toBe(900 + UNKNOWN_END_JUMP);
    expect(newEpochStartOffset(records, null, undefined)).toBe(700 + UNKNOWN_END_JUMP);
    expect(UNKNOWN_END_JUMP).toBeLessThan(Number.MAX_SAFE_INTEGER / 1024); // offsets stay exact in a float64
  });
});

describe("dbEpochStore (embedded PostgreSQL)", () => {
  let db: Db;
  let stop: () => Promise<void>;
  beforeAll(async () => {
    ({ db, stop } = await startTestDb());
  }, 60_000);
  afterAll(async () => {
    await stop?.();
  });

  it("keeps the first claim of an epoch, ends that only grow, and at most EPOCHS_KEPT epochs per terminal", async () => {
    const session = await db.labSession.create({ data: { labSlug: "epochs", learnerId: "l", provider: "static" } });
    const [a, b] = [dbEpochStore(db, session.id, "t-main"), dbEpochStore(db, session.id, "t-main")];
    // Two processes see the same new epoch at once: one base wins, both get it.
    const claims = await Promise.all([a.claim("boot/1", 100), b.claim("boot/1", 250)]);
    expect(claims[0]).toBe(claims[1]);
    await a.setEnd("boot/1", 500);
    await b.setEnd("boot/1", 400); // a process that read less does not pull the end back
    expect((await a.load()).get("boot/1")).toEqual({ startOffset: claims[0], endLogOffset: 500 });
    // Another terminal of the session is its own.
    expect((await dbEpochStore(db, session.id, "t-tab2").load()).size).toBe(0);
    // A learner restarting their holder in a loop: the table keeps the latest epochs only.
    for (let i = 2; i < EPOCHS_KEPT + 10; i++) await a.claim(`boot/${i}`, i * 1000);
    const kept = await a.load();
    expect(kept.size).toBe(EPOCHS_KEPT);
    expect(kept.has(`boot/${EPOCHS_KEPT + 9}`)).toBe(true);
    expect(kept.has("boot/1")).toBe(false);
    await a.settled();
  });
  it("a store made again in this process reads the end its predecessor is still writing (no unknown end, no 2^40 jump)", async () => {
    const session = await db.labSession.create({ data: { labSlug: "epochs-again", learnerId: "l", provider: "static" } });
    const before = dbEpochStore(db, session.id, "node01");
    await before.claim("boot/1", 0);
    // Another transaction holds the row, so the end's UPDATE waits (a slow database, a busy pool).
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    let locked!: () => void;
    const isLocked = new Promise<void>((r) => (locked = r));
    const holding = db.$transaction(
      async (tx) => {
        await tx.$queryRaw`SELECT 1 FROM "TerminalEpoch" WHERE "sessionId" = ${session.id} AND "terminal" = 'node01' FOR UPDATE`;
        locked();
        await held;
      },
      { timeout: 20_000 },
    );
    await isLocked;
    const ending = before.setEnd("boot/1", 4321); // the previous connector leaves the epoch, not awaited
    const again = dbEpochStore(db, session.id, "node01"); // the terminal is made again meanwhile
    const loaded = again.load();
    const early = await Promise.race([loaded.then(() => "loaded"), new Promise((r) => setTimeout(() => r("waiting"), 300))]);
    expect(early).toBe("waiting"); // it waits for the end being written, rather than read the row without it
    release();
    await holding;
    await ending;
    const known = await loaded;
    expect(known.get("boot/1")).toEqual({ startOffset: 0, endLogOffset: 4321 });
    expect(newEpochStartOffset(known, null, 4321)).toBe(4321); // the holder restarted meanwhile: seamless, no jump
  });
});
