/**
 * Static hosts, exclusive allocation, on a real PostgreSQL: concurrent starts racing for the
 * groups never share one (the claim's primary key decides), a released group is handed out
 * again, a failed hand-out frees its claim, and shared allocation claims nothing.
 */
import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Db } from "../db/client";
import { startTestDb } from "../testing/test-db";
import { parseEnv } from "../config";
import { log } from "../log";
import { writeStaticHostsFile, type NetnsHostSet } from "../testing/netns-hosts";
import { isNoCapacity } from "./provider";
import { DEMO_WARNING, startMachines } from "../compose/machines";
import { dbHostClaims, staticHostsProvider } from "./static-hosts";

let db: Db;
let stop: () => Promise<void>;
let dir: string;

beforeAll(async () => {
  ({ db, stop } = await startTestDb());
  dir = await fs.mkdtemp(path.join(os.tmpdir(), "labdeck-static-"));
  await fs.writeFile(path.join(dir, "key"), "not a real key\n");
}, 60_000);
afterAll(async () => {
  await stop?.();
  await fs.rm(dir, { recursive: true, force: true });
});

async function hostsFile(allocation: "exclusive" | "shared", groups: number, keyPath = "key"): Promise<string> {
  const file = path.join(dir, `hosts-${allocation}-${groups}-${keyPath.replace(/\W/g, "")}.json`);
  const machine = (name: string, i: number) => ({
    name,
    host: `10.0.0.${i}`,
    port: 22,
    user: "root",
    privateKeyPath: keyPath,
    hostKey: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIG9xY2hvc3RrZXlmb3J0ZXN0c29ubHkxMjM0NTY3OA",
  });
  await fs.writeFile(
    file,
    JSON.stringify({
      allocation,
      groups: Array.from({ length: groups }, (_, i) => ({ id: `g${i}`, machines: [machine("controlplane", i), machine("node01", i)] })),
    }),
  );
  return file;
}

describe("static hosts", () => {
  it("ten concurrent starts for three groups: three get distinct groups, seven get NoCapacity; a released group is given again", async () => {
    const provider = staticHostsProvider({
      file: await hostsFile("exclusive", 3),
      groupsInUse: async () => new Set(),
      claims: dbHostClaims(db),
    });
    const results = await Promise.allSettled(
      Array.from({ length: 10 }, (_, i) => provider.create({ sessionId: `race-${i}`, labSlug: "x", machines: ["controlplane", "node01"] })),
    );
    const won = results.flatMap((r) => (r.status === "fulfilled" ? [r.value[0]!.providerRef] : []));
    expect(won.sort()).toEqual(["g0", "g1", "g2"]);
    expect(results.filter((r) => r.status === "rejected" && isNoCapacity(r.reason))).toHaveLength(7);
    const holder = (await db.hostGroupClaim.findUniqueOrThrow({ where: { groupId: "g1" } })).sessionId;
    await provider.destroy(holder, []);
    const again = await provider.create({ sessionId: "after-release", labSlug: "x", machines: ["controlplane"] });
    expect(again[0]!.providerRef).toBe("g1");
    await db.hostGroupClaim.deleteMany();
  });

  it("a hand-out that fails after the claim frees the group", async () => {
    const provider = staticHostsProvider({
      file: await hostsFile("exclusive", 1, "missing-key"),
      groupsInUse: async () => new Set(),
      claims: dbHostClaims(db),
    });
    await expect(provider.create({ sessionId: "broken", labSlug: "x", machines: ["controlplane"] })).rejects.toThrow(
      /cannot read private key/,
    );
    expect(await db.hostGroupClaim.count()).toBe(0);
  });

  it("shared allocation hands the first group to everyone and claims nothing", async () => {
    const provider = staticHostsProvider({
      file: await hostsFile("shared", 2),
      groupsInUse: async () => new Set(),
      claims: dbHostClaims(db),
    });
    const sets = await Promise.all([1, 2, 3].map((i) => provider.create({ sessionId: `shared-${i}`, labSlug: "x", machines: ["node01"] })));
    expect(sets.map((s) => s[0]!.providerRef)).toEqual(["g0", "g0", "g0"]);
    expect(await db.hostGroupClaim.count()).toBe(0);
  });

  it("a hosts file of netns demo hosts is refused unless LABDECK_MACHINES=netns-demo names the demo mode", async () => {
    const file = path.join(dir, "demo-hosts.json");
    const host = {
      name: "controlplane",
      host: "10.0.0.9",
      port: 22,
      user: "root",
      privateKeyPath: "key",
      hostKey: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIG9xY2hvc3RrZXlmb3J0ZXN0c29ubHkxMjM0NTY3OA",
    };
    // What the netns tooling writes (only the fields the file takes are read from the set).
    await writeStaticHostsFile({ id: "demo", hosts: [host] } as unknown as NetnsHostSet, file, "shared");
    expect(JSON.parse(await fs.readFile(file, "utf8"))).toMatchObject({ demo: true });
    const env = (machines?: string) =>
      parseEnv({ NODE_ENV: "test", LABDECK_DATA_DIR: dir, LABDECK_HOSTS_FILE: file, ...(machines ? { LABDECK_MACHINES: machines } : {}) });
    for (const machines of [undefined, "static"]) {
      await expect(startMachines(env(machines), db, log)).rejects.toThrow(
        /lists netns demo hosts \("demo": true\): every learner would be root on this server\. For a single-user demo .* set LABDECK_MACHINES=netns-demo/,
      );
    }
    const demo = await startMachines(env("netns-demo"), db, log);
    expect(demo.kind).toBe("netns-demo");
    await demo.stop();
    expect(DEMO_WARNING).toMatch(/never give it to learners/);
    // A file of real hosts (no "demo") is served as static hosts, as before.
    const real = await hostsFile("exclusive", 1);
    const machines = await startMachines(parseEnv({ NODE_ENV: "test", LABDECK_DATA_DIR: dir, LABDECK_HOSTS_FILE: real }), db, log);
    expect(machines.kind).toBe("static");
    await machines.stop();
  });
});
