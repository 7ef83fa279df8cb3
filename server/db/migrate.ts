import { spawn } from "node:child_process";
import { createHash } from "node:crypto";
import fs from "node:fs/promises";
import { createRequire } from "node:module";
import path from "node:path";
import pg from "pg";

const require = createRequire(import.meta.url);

/**
 * Applies committed migrations (prisma/migrations) with `prisma migrate deploy`. The Prisma CLI
 * runs its wasm schema engine through the driver adapter in prisma.config.ts, fully offline.
 */
export async function migrateDeploy(databaseUrl: string, cwd = process.cwd()): Promise<void> {
  if (await allApplied(databaseUrl, path.join(cwd, "prisma", "migrations"))) return;
  const cli = path.join(path.dirname(require.resolve("prisma/package.json")), "build", "index.js");
  const output: Buffer[] = [];
  const code = await new Promise<number | null>((resolve, reject) => {
    const child = spawn(process.execPath, [cli, "migrate", "deploy"], {
      cwd,
      env: { ...process.env, DATABASE_URL: databaseUrl, PRISMA_HIDE_UPDATE_MESSAGE: "1" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    child.stdout.on("data", (b: Buffer) => output.push(b));
    child.stderr.on("data", (b: Buffer) => output.push(b));
    child.on("error", reject);
    child.on("close", resolve);
  });
  if (code !== 0) {
    throw new Error(`prisma migrate deploy failed (exit ${code}):\n${Buffer.concat(output).toString("utf8")}`);
  }
}

/**
 * Whether the database has exactly the committed migrations applied, each with the checksum
 * Prisma recorded (sha256 of its migration.sql), and none failed: then `migrate deploy` has
 * nothing to do and its CLI (~11 s to start on this machine's 2 cores) is not run. Anything
 * else — a new database, a pending, edited, failed or unknown migration — goes to the CLI,
 * which applies or reports it.
 */
async function allApplied(databaseUrl: string, migrationsDir: string): Promise<boolean> {
  const local = new Map<string, string>();
  for (const entry of await fs.readdir(migrationsDir, { withFileTypes: true }).catch(() => [])) {
    if (!entry.isDirectory()) continue;
    const sql = await fs.readFile(path.join(migrationsDir, entry.name, "migration.sql")).catch(() => null);
    if (sql) local.set(entry.name, createHash("sha256").update(sql).digest("hex"));
  }
  if (local.size === 0) return false;
  const client = new pg.Client({ connectionString: databaseUrl, connectionTimeoutMillis: 5000 });
  try {
    await client.connect();
    const { rows } = await client.query<{ migration_name: string; checksum: string; done: boolean }>(
      `SELECT migration_name, checksum, finished_at IS NOT NULL AS done FROM _prisma_migrations WHERE rolled_back_at IS NULL`,
    );
    if (rows.length !== local.size) return false;
    return rows.every((r) => r.done && local.get(r.migration_name) === r.checksum);
  } catch {
    return false; // no _prisma_migrations yet, or unreachable: the CLI says which
  } finally {
    await client.end().catch(() => undefined);
  }
}
