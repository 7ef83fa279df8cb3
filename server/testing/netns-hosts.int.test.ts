import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { readdirSync, readFileSync } from "node:fs";
import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { Client } from "ssh2";
import { describe, it, expect, beforeAll, afterAll } from "vitest";
import { createNetnsHosts, destroyNetnsHostsById, writeStaticHostsFile, type NetnsHost, type NetnsHostSet } from "./netns-hosts";
import { loadStaticHosts } from "../machines/static-hosts";

/** Creating the hosts (keygen, namespaces, sshd start-up) may take this long, in ms. */
const SETUP_TIMEOUT_MS = 30_000;
/** One SSH connect + exec round trip may take this long, in ms. */
const SSH_TIMEOUT_MS = 10_000;

const NAMES = ["controlplane", "node01", "node02"];
const isRoot = process.getuid?.() === 0;

/** Connects with the set's key, pinning `pinnedHostKey`, runs `command`, resolves with stdout. */
function sshExec(host: NetnsHost, command: string, pinnedHostKey = host.hostKey): Promise<string> {
  const expected = Buffer.from(pinnedHostKey.split(" ")[1]!, "base64");
  return new Promise((resolve, reject) => {
    const client = new Client();
    client
      .on("ready", () => {
        client.exec(command, (err, stream) => {
          if (err) return reject(err);
          let out = "";
          stream.on("data", (d: Buffer) => (out += d.toString("utf8")));
          stream.stderr.on("data", () => {});
          stream.on("close", () => {
            client.end();
            resolve(out);
          });
        });
      })
      .on("error", reject)
      .connect({
        host: host.host,
        port: host.port,
        username: host.user,
        privateKey: host.privateKey,
        readyTimeout: SSH_TIMEOUT_MS,
        // No hostHash: ssh2 hands us the raw key blob.
        hostVerifier: (key: Buffer) => key.equals(expected),
      });
  });
}

function namespaces(): string[] {
  return execFileSync("ip", ["netns", "list"], { encoding: "utf8" })
    .split("\n")
    .map((l) => l.trim().split(/\s+/)[0] ?? "")
    .filter(Boolean);
}

function links(): string[] {
  return execFileSync("ip", ["-o", "link", "show"], { encoding: "utf8" })
    .split("\n")
    .map((l) => /^\d+:\s+([^:@\s]+)/.exec(l)?.[1] ?? "")
    .filter(Boolean);
}

/** A unique argument for the command a held session runs (the hosts share this machine's process table). */
const HELD_SLEEP = "600.4317";
/** Waiting for a killed sshd to be reaped (asynchronously): a safety bound, polled every 20 ms. */
const REAPED = { timeout: 10_000, interval: 20 };

/** Whether a process with exactly this argv runs on the machine (a zombie's argv is empty). */
function processRuns(argv: string[]): boolean {
  const wanted = argv.join("\0") + "\0";
  return readdirSync("/proc").some((pid) => {
    if (!/^\d+$/.test(pid)) return false;
    try {
      return readFileSync(`/proc/${pid}/cmdline`, "utf8") === wanted;
    } catch {
      return false; // exited meanwhile
    }
  });
}

function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code !== "ESRCH";
  }
}

describe.skipIf(!isRoot)("netns hosts", () => {
  const id = "t" + randomBytes(4).toString("hex").slice(0, 5);
  const subnet = 200 + Math.floor(Math.random() * 50);
  let dir: string;
  let set: NetnsHostSet;
  let setupMs: number;

  beforeAll(async () => {
    dir = await fs.mkdtemp(path.join(os.tmpdir(), "labdeck-netns-"));
    const t0 = performance.now();
    set = await createNetnsHosts({ id, names: NAMES, subnet, dir });
    setupMs = performance.now() - t0;
    console.log(`created ${NAMES.length} netns hosts in ${setupMs.toFixed(0)} ms`);
  }, SETUP_TIMEOUT_MS);

  afterAll(async () => {
    try {
      await set?.destroy();
      await destroyNetnsHostsById(id);
    } finally {
      if (dir) await fs.rm(dir, { recursive: true, force: true });
    }
  });

  it("describes each host as requested", () => {
    expect(set.hosts.map((h) => h.name)).toEqual(NAMES);
    expect(set.hosts.map((h) => h.host)).toEqual([2, 6, 10].map((n) => `10.213.${subnet}.${n}`));
    for (const h of set.hosts) {
      expect(h.port).toBe(22);
      expect(h.user).toBe("root");
      expect(h.namespace).toBe(`ld-${id}-${h.name}`);
      expect(h.hostKey).toMatch(/^ssh-ed25519 [A-Za-z0-9+/=]+$/);
      expect(h.privateKey).toContain("BEGIN OPENSSH PRIVATE KEY");
      expect(path.isAbsolute(h.privateKeyPath)).toBe(true);
      expect(pidAlive(h.pid)).toBe(true);
    }
    expect(namespaces()).toEqual(expect.arrayContaining(set.hosts.map((h) => h.namespace)));
  });

  it("gives every host its own host key", () => {
    expect(new Set(set.hosts.map((h) => h.hostKey)).size).toBe(NAMES.length);
  });

  it("runs hostname over SSH on each host, with the pinned host key", async () => {
    const names = await Promise.all(set.hosts.map((h) => sshExec(h, "hostname")));
    expect(names.map((n) => n.trim())).toEqual(NAMES);
  });

  it("rejects a host presenting a different key than pinned", async () => {
    const [controlplane, node01] = set.hosts as [NetnsHost, NetnsHost];
    await expect(sshExec(node01, "hostname", controlplane.hostKey)).rejects.toThrow();
  });

  it("writes a static hosts file that static-hosts.ts accepts", async () => {
    const file = path.join(dir, "hosts.json");
    await writeStaticHostsFile(set, file, "exclusive");
    const parsed = await loadStaticHosts(file);
    expect(parsed.allocation).toBe("exclusive");
    expect(parsed.groups).toHaveLength(1);
    expect(parsed.groups[0]!.id).toBe(id);
    expect(parsed.groups[0]!.machines[0]).toEqual({
      name: "controlplane",
      host: `10.213.${subnet}.2`,
      port: 22,
      user: "root",
      privateKeyPath: set.hosts[0]!.privateKeyPath,
      hostKey: set.hosts[0]!.hostKey,
    });
  });

  it("destroy removes namespaces, links and sshd processes, and is idempotent", async () => {
    // An open session leaves an extra sshd + shell inside the namespace; destroy must get those too.
    const held = sshExec(set.hosts[0]!, `sleep ${HELD_SLEEP}`).catch(() => "closed");
    await expect.poll(() => processRuns(["sleep", HELD_SLEEP]), { timeout: SSH_TIMEOUT_MS }).toBe(true);

    await set.destroy();
    await set.destroy();
    await held;
    const left = namespaces().filter((n) => n.startsWith(`ld-${id}-`));
    expect(left).toEqual([]);
    expect(links().filter((l) => l.startsWith(`ld${id}h`))).toEqual([]);
    for (const h of set.hosts) expect(pidAlive(h.pid)).toBe(false);
    await expect.poll(() => processRuns(["sleep", HELD_SLEEP]), REAPED).toBe(false);
  });

  it("destroyNetnsHostsById on an unknown id is a no-op", async () => {
    await expect(destroyNetnsHostsById("zz9zz9")).resolves.toBeUndefined();
  });

  it("rejects bad options with a clear message", async () => {
    await expect(createNetnsHosts({ id: "Bad-Id", names: ["a"], subnet: 1, dir })).rejects.toThrow(/id must match/);
    await expect(createNetnsHosts({ id: "ok", names: ["a"], subnet: 300, dir })).rejects.toThrow(/subnet/);
  });
});

describe.skipIf(!isRoot)("netns hosts leftovers", () => {
  const id = "c" + randomBytes(4).toString("hex").slice(0, 4); // 5 chars: id + "x" must stay valid
  const subnet = 150 + Math.floor(Math.random() * 50);
  let dir: string;

  beforeAll(async () => {
    dir = await fs.mkdtemp(path.join(os.tmpdir(), "labdeck-netns-"));
  });

  afterAll(async () => {
    try {
      await destroyNetnsHostsById(id);
      await destroyNetnsHostsById(id + "x");
    } finally {
      if (dir) await fs.rm(dir, { recursive: true, force: true });
    }
  });

  it(
    "refuses a second set on a subnet in use",
    async () => {
      const first = await createNetnsHosts({ id, names: ["solo"], subnet, dir });
      try {
        await expect(createNetnsHosts({ id: id + "x", names: ["solo"], subnet, dir })).rejects.toThrow(/already in use/);
      } finally {
        await first.destroy();
      }
    },
    SETUP_TIMEOUT_MS,
  );

  it(
    "createNetnsHosts with the same id replaces the earlier run",
    async () => {
      const first = await createNetnsHosts({ id, names: ["solo"], subnet, dir });
      const second = await createNetnsHosts({ id, names: ["solo"], subnet, dir });
      await expect.poll(() => pidAlive(first.hosts[0]!.pid), REAPED).toBe(false);
      expect((await sshExec(second.hosts[0]!, "hostname")).trim()).toBe("solo");
      await second.destroy();
    },
    SETUP_TIMEOUT_MS,
  );

  it(
    "destroyNetnsHostsById removes a crashed run whose namespace is already gone",
    async () => {
      const set = await createNetnsHosts({ id, names: ["solo"], subnet, dir });
      const [host] = set.hosts as [NetnsHost];
      // Simulate a half-cleaned crash: namespace name gone, sshd (and with it the veth) still alive.
      execFileSync("ip", ["netns", "del", host.namespace]);
      expect(pidAlive(host.pid)).toBe(true);
      expect(links()).toContain(`ld${id}h0`);

      await destroyNetnsHostsById(id); // no dir: found by scanning /proc
      await expect.poll(() => pidAlive(host.pid), REAPED).toBe(false);
      expect(links()).not.toContain(`ld${id}h0`);
      await set.destroy(); // idempotent on what is already gone
    },
    SETUP_TIMEOUT_MS,
  );
});
