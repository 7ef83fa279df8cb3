/**
 * migrateDeploy against a real embedded PostgreSQL: a new database gets every migration through
 * the Prisma CLI; a database already up to date is recognised without starting the CLI (the
 * second start of the server is seconds, not +11 s); one that lacks an applied migration's
 * record goes to the CLI again (here it fails re-applying it, which shows the CLI ran).
 */
import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { freePort } from "../testing/stack";
import { startEmbeddedPostgres, type EmbeddedDatabase } from "./embedded";
import { migrateDeploy } from "./migrate";

/** Every `prisma migrate deploy` this process starts (the real spawn runs; the test only counts). */
const cliRuns = vi.hoisted(() => ({ count: 0 }));
vi.mock("node:child_process", async (importOriginal) => {
  const real = await importOriginal<typeof import("node:child_process")>();
  const spawn = ((...args: Parameters<typeof real.spawn>) => {
    const argv = (Array.isArray(args[1]) ? args[1] : []) as readonly string[];
    if (argv.includes("migrate") && argv.includes("deploy")) cliRuns.count++;
    return real.spawn(...args);
  }) as typeof real.spawn;
  return { ...real, spawn, default: { ...real, spawn } };
});

let dir: string;
let db: EmbeddedDatabase;

beforeAll(async () => {
  dir = await fs.mkdtemp(path.join(os.tmpdir(), "labdeck-migrate-"));
  await fs.chmod(dir, 0o711); // embedded PostgreSQL runs as user postgres and must enter it
  db = await startEmbeddedPostgres(path.join(dir, "data"), await freePort());
});

afterAll(async () => {
  await db?.stop();
  await fs.rm(dir, { recursive: true, force: true });
});

async function sql(text: string): Promise<unknown[]> {
  const client = new pg.Client({ connectionString: db.url });
  await client.connect();
  try {
    return (await client.query(text)).rows;
  } finally {
    await client.end();
  }
}

describe("migrateDeploy", () => {
  it("applies every migration once, then recognises an up-to-date database without the CLI", async () => {
    await migrateDeploy(db.url);
    expect(cliRuns.count).toBe(1);
    const migrations = (await fs.readdir("prisma/migrations", { withFileTypes: true })).filter((e) => e.isDirectory());
    expect(await sql("SELECT migration_name FROM _prisma_migrations WHERE finished_at IS NOT NULL")).toHaveLength(migrations.length);

    // Up to date: recognised from the table alone, the CLI is not started.
    await migrateDeploy(db.url);
    expect(cliRuns.count).toBe(1);

    const last = migrations
      .map((e) => e.name)
      .sort()
      .at(-1)!;
    await sql(`DELETE FROM _prisma_migrations WHERE migration_name = '${last}'`);
    await expect(migrateDeploy(db.url)).rejects.toThrow(/prisma migrate deploy failed/);
    expect(cliRuns.count).toBe(2);
  }, 180_000);
});
