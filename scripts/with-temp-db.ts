/**
 * Runs a command with DATABASE_URL pointing at a throw-away embedded PostgreSQL, then removes it.
 * Used by scripts/new-migration.sh (the Prisma CLI needs a database connection even to diff).
 */
import { spawn } from "node:child_process";
import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { startEmbeddedPostgres } from "../server/db/embedded";
import { freePort } from "../server/testing/stack";

const [command, ...args] = process.argv.slice(2);
if (!command) {
  process.stderr.write("usage: tsx scripts/with-temp-db.ts <command> [args...]\n");
  process.exit(2);
}
const dir = await fs.mkdtemp(path.join(os.tmpdir(), "labdeck-tmpdb-"));
await fs.chmod(dir, 0o711);
const db = await startEmbeddedPostgres(dir, await freePort());
const code = await new Promise<number>((resolve) => {
  const child = spawn(command, args, { stdio: "inherit", env: { ...process.env, DATABASE_URL: db.url } });
  child.on("close", (c) => resolve(c ?? 1));
});
await db.stop();
await fs.rm(dir, { recursive: true, force: true });
process.exit(code);
