/**
 * Singleton roles on a real PostgreSQL: of several contenders one holds a role; a clean stop
 * hands it over at the next renewal; a holder killed -9 (a real child process running the real
 * sweeper) loses it once its lease runs out, and the other process's sweeper takes over; the
 * warm pool fills on one process per host. Machine providers are stand-ins at the far edge
 * (sessions here have no machines; pool sets are records in memory).
 */
import { spawn } from "node:child_process";
import { afterAll, beforeAll, expect, it } from "vitest";
import type { Db } from "../db/client";
import { log } from "../log";
import type { MachineProvider } from "../machines/provider";
import { poolOnOneProcess, warmPoolRole } from "../compose/machines";
import { WarmPool } from "../machines/warm-pool";
import { machineEndpoint } from "../sessions/lab-sessions";
import { SessionSweeper } from "../sessions/sweeper";
import { TerminalRegistry } from "../terminal/registry";
import { startTestDb } from "../testing/test-db";
import { SingletonRole } from "./roles";

let db: Db;
let url: string;
let stopDb: () => Promise<void>;

beforeAll(async () => {
  ({ db, url, stop: stopDb } = await startTestDb());
}, 60_000);
afterAll(async () => stopDb?.());

/**
 * Resolves once role `name`'s lease has been renewed `renewals` times by one holder (each renewal
 * moves leaseUntil on), and asserts that the holder never changed. Every contender tries as often
 * as the holder renews, so this also counts their attempts to take it.
 */
async function renewed(name: string, renewals: number): Promise<void> {
  const seen = new Set<number>();
  const holders = new Set<string>();
  await expect
    .poll(
      async () => {
        const row = await db.roleLease.findUnique({ where: { name } });
        if (row) {
          seen.add(row.leaseUntil.getTime());
          holders.add(row.holder);
        }
        return seen.size;
      },
      { timeout: 30_000, interval: 20 },
    )
    .toBeGreaterThan(renewals);
  expect(holders.size, `holders of ${name}: ${[...holders].join(", ")}`).toBe(1);
}

/** A role's work that counts how often it started and whether it runs now. */
function counting() {
  const state = { starts: 0, running: false };
  return { state, work: { start: () => void (state.starts++, (state.running = true)), stop: () => void (state.running = false) } };
}

it("of five contenders exactly one holds a role; a clean stop hands it to another within one renewal", async () => {
  const contenders = Array.from({ length: 5 }, (_, i) => {
    const { state, work } = counting();
    return { state, role: new SingletonRole({ db, log }, "contended", work, { holder: `p${i}`, leaseMs: 3_000, renewMs: 300 }) };
  });
  contenders.forEach((c) => c.role.start());
  await expect.poll(() => contenders.filter((c) => c.role.held).length, { timeout: 5_000 }).toBe(1);
  await renewed("contended", 3); // several renewals: still one, the same one
  const holders = contenders.filter((c) => c.state.running);
  expect(holders).toHaveLength(1);
  expect(contenders.reduce((n, c) => n + c.state.starts, 0)).toBe(1);

  const first = holders[0]!;
  const stoppedAt = Date.now();
  await first.role.stop();
  expect(first.state.running).toBe(false);
  await expect.poll(() => contenders.filter((c) => c.role.held).length, { timeout: 5_000, interval: 10 }).toBe(1);
  const handoverMs = Date.now() - stoppedAt;
  console.log(`clean stop: role handed over in ${handoverMs} ms (renewal 300 ms, lease 3000 ms)`);
  expect(contenders.filter((c) => c.state.running)).toHaveLength(1);
  expect(first.role.held).toBe(false);
  for (const c of contenders) await c.role.stop();
  expect(await db.roleLease.count({ where: { name: "contended" } })).toBe(0);
});

it("two processes, one sweeper: the child's runs; kill -9 the child and this process's sweeper takes over within the lease", async () => {
  const leaseMs = 2_000;
  const renewMs = 500;
  const sweepMs = 200;
  const child = spawn(
    process.execPath,
    ["--import", "tsx", "server/testing/sweeper-child.ts", String(leaseMs), String(renewMs), String(sweepMs)],
    {
      env: { ...process.env, DATABASE_URL: url, LOG_LEVEL: "warn" },
      stdio: ["ignore", "pipe", "inherit"],
      detached: true,
    },
  );
  const held = new Promise<void>((resolve) => child.stdout!.on("data", (chunk: Buffer) => chunk.toString().includes("held") && resolve()));
  await held;

  // This process: the same sweeper under the same role; its provider records teardowns.
  const destroyed: string[] = [];
  const recording: MachineProvider = { name: "fake-recording", create: async () => [], destroy: async (sid) => void destroyed.push(sid) };
  const terminals = new TerminalRegistry((sid, machine) => machineEndpoint(db, sid, machine));
  const sweeper = new SessionSweeper({ db, provider: recording, terminals, log }, { idleMs: 0, intervalMs: sweepMs });
  let tookOverAt = 0;
  const role = new SingletonRole(
    { db, log },
    "sweeper",
    {
      start: () => {
        tookOverAt = Date.now();
        sweeper.start();
      },
      stop: () => sweeper.stop(),
    },
    { holder: "parent", leaseMs, renewMs },
  );
  role.start();

  const expiredSession = (learnerId: string) =>
    db.labSession.create({
      data: {
        learnerId,
        labSlug: "hello-terminal",
        provider: "fake",
        state: "ready",
        readyAt: new Date(),
        expiresAt: new Date(Date.now() - 1_000),
      },
    });
  const a = await expiredSession("swept-by-child");
  await expect.poll(async () => (await db.labSession.findUniqueOrThrow({ where: { id: a.id } })).state, { timeout: 5_000 }).toBe("ended");
  expect(destroyed).toEqual([]); // the child swept it, not this process
  expect(role.held).toBe(false);
  expect((await db.roleLease.findUniqueOrThrow({ where: { name: "sweeper" } })).holder).toBe(`child:${child.pid}`);

  process.kill(-child.pid!, "SIGKILL");
  const killedAt = Date.now();
  await expect.poll(() => role.held, { timeout: leaseMs + 5_000, interval: 10 }).toBe(true);
  const takeoverMs = tookOverAt - killedAt;
  console.log(`kill -9 of the sweeper's holder: taken over after ${takeoverMs} ms (lease ${leaseMs} ms, renewal ${renewMs} ms)`);

  const b = await expiredSession("swept-by-parent");
  await expect.poll(async () => (await db.labSession.findUniqueOrThrow({ where: { id: b.id } })).state, { timeout: 5_000 }).toBe("ended");
  expect(destroyed).toEqual([b.id]);
  await role.stop();
  expect(await db.roleLease.count({ where: { name: "sweeper" } })).toBe(0);
}, 60_000);

it("the warm pool refills on one process per host: the holder's pool fills, the other's stays empty until it takes over", async () => {
  const created: string[] = [];
  const destroyed: string[] = [];
  const inMemory = (owner: string): MachineProvider => ({
    name: "fake-memory",
    create: async (request) => {
      created.push(`${owner}:${request.sessionId}`);
      return request.machines.map((name) => ({
        name,
        host: "127.0.0.1",
        port: 22,
        user: "root",
        privateKey: "k",
        hostKey: "h",
        providerRef: `${request.sessionId}/${name}`,
      }));
    },
    destroy: async (sid) => void destroyed.push(`${owner}:${sid}`),
  });
  const machines = ["controlplane", "node01", "node02"];
  const pools = ["a", "b"].map((owner) => new WarmPool(inMemory(owner), { size: 1, machines, log }));
  const roles = pools.map((pool, i) =>
    poolOnOneProcess({ db, log }, pool, { host: "host-1", holder: `p${i}`, leaseMs: 1_000, renewMs: 200 }),
  );
  await expect.poll(() => pools.map((p) => p.status().ready).sort(), { timeout: 5_000 }).toEqual([0, 1]);
  await renewed(warmPoolRole("host-1"), 2); // the other process tried to take the role meanwhile
  expect(created).toHaveLength(1); // one set on the host, not one per process
  const holder = roles.findIndex((r) => r.held);
  const other = 1 - holder;

  await roles[holder]!.stop();
  await expect.poll(() => pools[other]!.status().ready, { timeout: 5_000 }).toBe(1);
  expect(pools[holder]!.status().ready).toBe(0);
  expect(destroyed).toEqual([created[0]]); // the first holder's unclaimed set went
  expect(created).toHaveLength(2);
  await roles[other]!.stop();
  await Promise.all(pools.map((p) => p.stop()));
});
