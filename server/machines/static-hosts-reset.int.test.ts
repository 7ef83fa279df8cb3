/**
 * Static hosts' reset hook on real sshd hosts (network namespaces) and a real PostgreSQL: a
 * released group is held out until its reset script has run on its machines over SSH, so what a
 * learner left there is gone for the next; a failing reset keeps the group out and is retried with
 * backoff until it succeeds; concurrent starts meanwhile never share a group nor get the resetting
 * one. (Netns hosts share this machine's filesystem, so each group's "machine state" is a file in
 * a directory of this test.)
 */
import { randomBytes } from "node:crypto";
import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Db } from "../db/client";
import { metrics } from "../ops/metrics";
import { startTestDb } from "../testing/test-db";
import { createNetnsHosts, type NetnsHostSet } from "../testing/netns-hosts";
import { isNoCapacity } from "./provider";
import { SshExecPool } from "../ssh/exec";
import { dbHostClaims, RESET_BACKOFF_MIN_MS, staticHostsProvider, type StaticHostsProvider } from "./static-hosts";

let db: Db;
let stopDb: () => Promise<void>;
let dir: string;
let sets: NetnsHostSet[] = [];
const pool = new SshExecPool();
const providers: StaticHostsProvider[] = [];

beforeAll(async () => {
  ({ db, stop: stopDb } = await startTestDb());
  dir = await fs.mkdtemp(path.join(os.tmpdir(), "labdeck-reset-"));
  sets = await Promise.all(
    [121, 122].map((subnet) =>
      createNetnsHosts({ id: `r${subnet}`, names: ["controlplane"], subnet, dir: path.join(dir, `hosts-${subnet}`), holder: false }),
    ),
  );
}, 120_000);

afterAll(async () => {
  for (const p of providers) p.stop();
  pool.closeAll();
  for (const set of sets) await set.destroy();
  await stopDb?.();
  await fs.rm(dir, { recursive: true, force: true });
});

/** A hosts file of the netns sets as exclusive groups, each with `reset(groupId)` as its reset. */
async function provider(reset: (groupId: string) => string, count = sets.length): Promise<StaticHostsProvider> {
  const file = path.join(dir, `hosts-${randomBytes(4).toString("hex")}.json`);
  const groups = sets.slice(0, count).map((set) => ({
    id: set.id,
    reset: reset(set.id),
    resetTimeoutSeconds: 20,
    machines: set.hosts.map((h) => ({
      name: h.name,
      host: h.host,
      port: h.port,
      user: h.user,
      privateKeyPath: h.privateKeyPath,
      hostKey: h.hostKey,
    })),
  }));
  await fs.writeFile(file, JSON.stringify({ allocation: "exclusive", groups }));
  const p = staticHostsProvider({ file, groupsInUse: async () => new Set(), claims: dbHostClaims(db), installHolder: false });
  providers.push(p);
  return p;
}

const marker = (groupId: string) => path.join(dir, `${groupId}.left-by-learner`);
const exists = (file: string) =>
  fs.access(file).then(
    () => true,
    () => false,
  );
const start = (p: StaticHostsProvider, sessionId: string) => p.create({ sessionId, labSlug: "x", machines: ["controlplane"] });
const failedResets = async () => (await metrics().hostGroupResets.get()).values.find((v) => v.labels.outcome === "failed")?.value ?? 0;

describe("static hosts: reset before reuse", () => {
  it("a released group is held out while its reset runs on its machine; the next learner gets it without what the last one left", async () => {
    // Slow on purpose: a start during the reset must find the group held out.
    const p = await provider((g) => `/bin/sleep 2; /bin/rm -f ${marker(g)}`, 1);
    const [first] = await start(p, "reuse-1");
    const group = first!.providerRef;
    const left = await pool.run(first!, `/usr/bin/touch ${marker(group)}`, 10);
    expect(left.outcome).toBe("pass");
    expect(await exists(marker(group))).toBe(true);

    await p.destroy("reuse-1", []);
    const during = await start(p, "reuse-2").catch((e: unknown) => e);
    expect(isNoCapacity(during)).toBe(true);
    expect(await db.hostGroupClaim.findUniqueOrThrow({ where: { groupId: group } })).toMatchObject({
      sessionId: "reuse-1",
      resetDueAt: expect.any(Date),
    });

    await p.runResets();
    expect(await exists(marker(group))).toBe(false);
    const [next] = await start(p, "reuse-2");
    expect(next!.providerRef).toBe(group);
    await p.destroy("reuse-2", []);
    await p.runResets();
    expect(await db.hostGroupClaim.count()).toBe(0);
  }, 60_000);

  it("a failing reset holds the group out (logged, counted, retried with backoff) until a try succeeds", async () => {
    const fixed = path.join(dir, "disk-fixed");
    const p = await provider(() => `if [ -e ${fixed} ]; then exit 0; fi; echo "disk still busy" >&2; exit 3`, 1);
    const [m] = await start(p, "failing-1");
    const group = m!.providerRef;
    const failedBefore = await failedResets();
    await p.destroy("failing-1", []);
    await p.runResets();
    const row = await db.hostGroupClaim.findUniqueOrThrow({ where: { groupId: group } });
    expect(row.resetAttempts).toBe(1);
    expect(row.resetError).toContain("disk still busy");
    expect(row.resetDueAt!.getTime()).toBeGreaterThan(Date.now() + RESET_BACKOFF_MIN_MS / 2);
    expect(await failedResets()).toBe(failedBefore + 1);
    expect(isNoCapacity(await start(p, "failing-2").catch((e: unknown) => e))).toBe(true);
    // Not due yet: another look changes nothing.
    await p.runResets();
    expect((await db.hostGroupClaim.findUniqueOrThrow({ where: { groupId: group } })).resetAttempts).toBe(1);

    await fs.writeFile(fixed, "");
    await expect
      .poll(
        async () => {
          await p.runResets();
          return db.hostGroupClaim.count({ where: { groupId: group } });
        },
        { timeout: 20_000, interval: 500 },
      )
      .toBe(0);
    const [again] = await start(p, "failing-3");
    expect(again!.providerRef).toBe(group);
    await db.hostGroupClaim.deleteMany();
  }, 60_000);

  it("eight concurrent starts while one of two groups resets: one gets the other group, seven get NoCapacity, nobody the resetting one", async () => {
    const p = await provider((g) => `/bin/sleep 3; /bin/rm -f ${marker(g)}`);
    const [held] = await start(p, "concurrent-0");
    const resetting = held!.providerRef;
    await p.destroy("concurrent-0", []);
    const results = await Promise.allSettled(Array.from({ length: 8 }, (_, i) => start(p, `concurrent-${i + 1}`)));
    const won = results.flatMap((r) => (r.status === "fulfilled" ? [r.value[0]!.providerRef] : []));
    expect(won).toHaveLength(1);
    expect(won[0]).not.toBe(resetting);
    expect(results.filter((r) => r.status === "rejected" && isNoCapacity(r.reason))).toHaveLength(7);
    await p.runResets();
    const claims = await db.hostGroupClaim.findMany();
    expect(claims.map((c) => c.groupId)).toEqual([won[0]]);
    await db.hostGroupClaim.deleteMany();
  }, 60_000);

  it("a hosts file with a reset on shared allocation is refused with a clear error", async () => {
    const file = path.join(dir, "shared-reset.json");
    const h = sets[0]!.hosts[0]!;
    await fs.writeFile(
      file,
      JSON.stringify({
        allocation: "shared",
        groups: [
          {
            id: "s",
            reset: "true",
            machines: [{ name: "controlplane", host: h.host, user: "root", privateKeyPath: h.privateKeyPath, hostKey: h.hostKey }],
          },
        ],
      }),
    );
    const p = staticHostsProvider({ file, groupsInUse: async () => new Set(), claims: dbHostClaims(db), installHolder: false });
    await expect(start(p, "shared-1")).rejects.toThrow(/group s: "reset" needs "allocation": "exclusive"/);
  });
});
