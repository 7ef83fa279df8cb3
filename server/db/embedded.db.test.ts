/**
 * The embedded database's lifetime against real PostgreSQL processes: a server killed with
 * SIGKILL leaves nothing running (the watchdog stops its postgres), a postgres orphaned anyway
 * is stopped and started again by the next start with its data, and a live owner or a taken
 * port is reported in one sentence instead of being killed. Authentication is scram-sha-256, also
 * for a data directory made before with cleartext `password` rules. The crashed server is a real child
 * process killed with SIGKILL.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { createHash } from "node:crypto";
import { readdirSync, readFileSync } from "node:fs";
import fs from "node:fs/promises";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import pg from "pg";
import { afterAll, describe, expect, it } from "vitest";
import { freePort } from "../testing/stack";
import { EmbeddedPostgresError, processStartTime, startEmbeddedPostgres } from "./embedded";

const dirs: string[] = [];
const children: ChildProcess[] = [];

afterAll(async () => {
  for (const child of children) if (child.exitCode === null) child.kill("SIGKILL");
  for (const dir of dirs) await fs.rm(dir, { recursive: true, force: true });
});

async function dataDir(): Promise<string> {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), "labdeck-embedded-"));
  await fs.chmod(dir, 0o711); // embedded PostgreSQL runs as user postgres and must enter it
  dirs.push(dir);
  return path.join(dir, "data");
}

/** A real process owning the database (server/testing/embedded-owner.ts); resolves with its URL. */
async function startOwner(dir: string, port: number): Promise<{ child: ChildProcess; url: string }> {
  const child = spawn(process.execPath, ["--import", "tsx", "server/testing/embedded-owner.ts", dir, String(port)], {
    env: { ...process.env, LOG_LEVEL: "warn" },
    stdio: ["ignore", "pipe", "inherit"],
  });
  children.push(child);
  const url = await new Promise<string>((resolve, reject) => {
    let out = "";
    child.stdout!.on("data", (b: Buffer) => {
      out += b.toString("utf8");
      const m = /^READY (\S+)$/m.exec(out);
      if (m) resolve(m[1]!);
    });
    child.once("exit", (code) => reject(new Error(`owner exited (${code}) before it was ready: ${out}`)));
  });
  return { child, url };
}

function postmasterPid(dir: string): number {
  return Number(readFileSync(path.join(dir, "postgres", "postmaster.pid"), "utf8").split("\n")[0]);
}

/** The watchdog process started for this postmaster (its argv names the postmaster's pid). */
function watchdogOf(postmaster: number): number {
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    const argv = (() => {
      try {
        return readFileSync(`/proc/${entry}/cmdline`, "utf8").split("\0");
      } catch {
        return [];
      }
    })();
    if (argv.some((a) => a.endsWith("postgres-watchdog.mjs")) && argv.includes(String(postmaster))) return Number(entry);
  }
  throw new Error(`no watchdog for postmaster ${postmaster}`);
}

async function query<T>(url: string, sql: string, params: unknown[] = []): Promise<T[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query(sql, params)).rows as T[];
  } finally {
    await client.end();
  }
}

describe("embedded PostgreSQL lifetime", () => {
  it("stops a server's postgres when the server is killed with SIGKILL (watchdog)", async () => {
    const dir = await dataDir();
    const { child } = await startOwner(dir, await freePort());
    const pid = postmasterPid(dir);
    const started = processStartTime(pid)!;
    expect(started).toBeTruthy();
    child.kill("SIGKILL");
    const killedAt = Date.now();
    await expect.poll(() => processStartTime(pid) !== started, { timeout: 15_000 }).toBe(true); // the postmaster exited
    console.log(`postmaster gone ${Date.now() - killedAt} ms after SIGKILL of its server`);
  }, 120_000);

  it("a postgres left running by a crashed server is stopped and started again, data kept", async () => {
    const dir = await dataDir();
    const port = await freePort();
    const { child, url } = await startOwner(dir, port);
    await query(url, "CREATE TABLE kept (v text)");
    await query(url, "INSERT INTO kept VALUES ('before the crash')");
    const orphan = postmasterPid(dir);
    // The worst case: the watchdog dies with the server (e.g. a kill of every process).
    process.kill(watchdogOf(orphan), "SIGKILL");
    child.kill("SIGKILL");
    await new Promise((r) => child.once("exit", r));
    // Its watchdog and its server gone, the orphaned postmaster still runs and serves (one that
    // was shutting down would refuse the connection).
    expect(processStartTime(orphan), "the orphaned postmaster still runs").not.toBeNull();
    expect(await query<{ v: string }>(url, "SELECT v FROM kept")).toEqual([{ v: "before the crash" }]);

    const started = Date.now();
    const db = await startEmbeddedPostgres(dir, port);
    try {
      console.log(`second start over an orphaned postmaster: ${Date.now() - started} ms`);
      expect(processStartTime(orphan)).toBeNull();
      expect(postmasterPid(dir)).not.toBe(orphan);
      expect(await query<{ v: string }>(db.url, "SELECT v FROM kept")).toEqual([{ v: "before the crash" }]);
    } finally {
      await db.stop();
    }
    await expect(fs.access(path.join(dir, "postgres", "postmaster.pid"))).rejects.toThrow();
  }, 120_000);

  it("a live owner is reported in one sentence and its database keeps running", async () => {
    const dir = await dataDir();
    const port = await freePort();
    const { child, url } = await startOwner(dir, port);
    const error = await startEmbeddedPostgres(dir, port).then(
      () => null,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(EmbeddedPostgresError);
    const message = (error as Error).message;
    expect(message).toContain(`another Labdeck process (pid ${child.pid}`);
    expect(message).toMatch(/stop it first .* or set LABDECK_DATA_DIR to another directory$/);
    expect(message).not.toContain("\n");
    expect(await query(url, "SELECT 1 AS one")).toEqual([{ one: 1 }]);
    child.kill("SIGTERM");
    await new Promise((r) => child.once("exit", r));
  }, 120_000);

  it("a taken port is reported in one sentence naming LABDECK_PG_PORT", async () => {
    const dir = await dataDir();
    const taken = net.createServer();
    await new Promise<void>((r) => taken.listen(0, "127.0.0.1", r));
    const port = (taken.address() as net.AddressInfo).port;
    try {
      await expect(startEmbeddedPostgres(dir, port)).rejects.toThrow(
        new EmbeddedPostgresError(
          `port ${port} (LABDECK_PG_PORT) is already in use by another program; stop it or set LABDECK_PG_PORT to a free port`,
        ),
      );
    } finally {
      taken.close();
    }
    // Nothing is left claiming the directory: a start on a free port works.
    const db = await startEmbeddedPostgres(dir, await freePort());
    await db.stop();
  }, 120_000);
});

describe("embedded PostgreSQL authentication", () => {
  /** pg_hba.conf's rules (comments and blank lines dropped), each as its method. */
  const hbaMethods = async (dir: string) =>
    (await fs.readFile(path.join(dir, "postgres", "pg_hba.conf"), "utf8"))
      .split("\n")
      .filter((l) => /^\s*(local|host)/.test(l))
      .map((l) => l.trim().split(/\s+/).at(-1));

  it("a new cluster asks for scram-sha-256 everywhere and stores the password as a SCRAM verifier", async () => {
    const dir = await dataDir();
    const db = await startEmbeddedPostgres(dir, await freePort());
    try {
      const methods = await hbaMethods(dir);
      expect(methods.length).toBeGreaterThan(0);
      expect(new Set(methods)).toEqual(new Set(["scram-sha-256"]));
      const [role] = await query<{ rolpassword: string }>(db.url, "SELECT rolpassword FROM pg_authid WHERE rolname = current_user");
      expect(role!.rolpassword).toMatch(/^SCRAM-SHA-256\$/);
      await expect(query(db.url.replace(/:[^:@/]+@/, ":wrong-password@"), "SELECT 1")).rejects.toThrow(/password authentication failed/);
    } finally {
      await db.stop();
    }
  }, 120_000);

  it("a data directory from before (cleartext `password` rules, an MD5 verifier) is moved to SCRAM on start, data kept", async () => {
    const dir = await dataDir();
    const port = await freePort();
    const first = await startEmbeddedPostgres(dir, port);
    const hbaFile = path.join(dir, "postgres", "pg_hba.conf");
    try {
      await query(first.url, "CREATE TABLE kept (v text)");
      await query(first.url, "INSERT INTO kept VALUES ('from the old cluster')");
      // Make it what initdb --auth=password and an older PostgreSQL left behind.
      const password = decodeURIComponent(/:([^:@/]+)@/.exec(first.url)![1]!);
      // Cleartext rules first (SCRAM rules cannot check an MD5 verifier), then an MD5 verifier, as
      // PostgreSQL stores it ("md5" + md5(password + user)), set directly.
      await fs.writeFile(hbaFile, (await fs.readFile(hbaFile, "utf8")).replaceAll("scram-sha-256", "password"));
      await query(first.url, "SELECT pg_reload_conf()");
      const md5 = "md5" + createHash("md5").update(`${password}labdeck`).digest("hex");
      await query(first.url, `ALTER ROLE CURRENT_USER PASSWORD '${md5}'`);
      const [old] = await query<{ rolpassword: string }>(first.url, "SELECT rolpassword FROM pg_authid WHERE rolname = current_user");
      expect(old!.rolpassword).toBe(md5);
    } finally {
      await first.stop();
    }
    expect(new Set(await hbaMethods(dir))).toEqual(new Set(["password"]));

    const second = await startEmbeddedPostgres(dir, port);
    try {
      expect(new Set(await hbaMethods(dir))).toEqual(new Set(["scram-sha-256"]));
      const [role] = await query<{ rolpassword: string }>(second.url, "SELECT rolpassword FROM pg_authid WHERE rolname = current_user");
      expect(role!.rolpassword).toMatch(/^SCRAM-SHA-256\$/);
      expect(await query<{ v: string }>(second.url, "SELECT v FROM kept")).toEqual([{ v: "from the old cluster" }]);
    } finally {
      await second.stop();
    }
    // And it stays so: a third start changes nothing and still connects.
    const third = await startEmbeddedPostgres(dir, port);
    try {
      expect(new Set(await hbaMethods(dir))).toEqual(new Set(["scram-sha-256"]));
      expect(await query<{ v: string }>(third.url, "SELECT v FROM kept")).toHaveLength(1);
    } finally {
      await third.stop();
    }
  }, 180_000);
});
