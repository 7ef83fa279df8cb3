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
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort } from "../testing/stack";
import { startEmbeddedPostgres, type EmbeddedDatabase } from "./embedded";
import { migrateDeploy } from "./migrate";

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
    const migrations = (await fs.readdir("prisma/migrations", { withFileTypes: true })).filter((e) => e.isDirectory());
    expect(await sql("SELECT migration_name FROM _prisma_migrations WHERE finished_at IS NOT NULL")).toHaveLength(migrations.length);

    const started = Date.now();
    await migrateDeploy(db.url);
    const ms = Date.now() - started;
    console.log(`migrateDeploy on an up-to-date database: ${ms} ms`);
    expect(ms).toBeLessThan(1500);

    const last = migrations
      .map((e) => e.name)
      .sort()
      .at(-1)!;
    await sql(`DELETE FROM _prisma_migrations WHERE migration_name = '${last}'`);
    await expect(migrateDeploy(db.url)).rejects.toThrow(/prisma migrate deploy failed/);
  }, 180_000);
});
