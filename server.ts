/**
 * The Labdeck process: Next.js pages and API, plus the terminal WebSocket gateway on
 * TERMINAL_WS_PATH and the web preview, in one HTTP server. Start-up: environment -> database
 * (embedded PostgreSQL unless DATABASE_URL) -> migrations -> services (server/compose/compose.ts)
 * -> Next.js -> listen.
 */
import http from "node:http";
import next from "next";
import { ensureFirstAdmin } from "./server/auth/invitations";
import { composePlatform, settingsFromEnv, type Platform } from "./server/compose/compose";
import { startMachines } from "./server/compose/machines";
import { setServices } from "./server/compose/services";
import { parseEnv, publicUrl, type Env } from "./server/config";
import { createDbWithPool } from "./server/db/client";
import { startEmbeddedPostgres, type EmbeddedDatabase } from "./server/db/embedded";
import { migrateDeploy } from "./server/db/migrate";
import { trackResponses } from "./server/http/drain";
import { APP_HEADER_BYTES, createAppServer, headerBytes } from "./server/http/guard";
import { zonedConsoleTime } from "./server/i18n/time-zone";
import { log } from "./server/log";
import { opsHandler } from "./server/ops/http";
import { observeProcess } from "./server/ops/metrics";
import { loadSecret } from "./server/secret";
import { errorForLog, startupFailureMessage } from "./server/startup-failure";

/**
 * Bound on a graceful stop after the drain (terminals, machines, database); a normal one takes
 * about a second. The whole stop is bounded by LABDECK_DRAIN_TIMEOUT_MS + this.
 */
const STOP_LIMIT_MS = 30_000;

/** Stopped when start-up fails after it started (a later step threw). */
let embedded: EmbeddedDatabase | null = null;

async function main(): Promise<void> {
  const env = parseEnv();
  // Next.js prepares (seconds: its config, the build's manifests) while the database starts and
  // the services are made; it needs neither.
  const dev = env.NODE_ENV !== "production";
  const app = next({ dev, dir: process.cwd(), hostname: env.HOST, port: env.PORT });
  const prepared = app.prepare().then(
    () => null,
    (error: unknown) => error,
  );
  let databaseUrl = env.DATABASE_URL;
  if (!databaseUrl) {
    embedded = await startEmbeddedPostgres(env.LABDECK_DATA_DIR, env.LABDECK_PG_PORT);
    databaseUrl = embedded.url;
  }
  await migrateDeploy(databaseUrl);
  const { db, pool: dbPool } = createDbWithPool(databaseUrl, env.LABDECK_DB_POOL_SIZE);
  const secret = await loadSecret(env.LABDECK_DATA_DIR, env.LABDECK_SECRET);
  const platform = await composePlatform({
    env,
    db,
    databaseUrl,
    secret,
    log,
    settings: settingsFromEnv(env),
    machines: ({ labs, pool }) => startMachines(env, db, log, { catalog: labs, exec: pool }),
    logTerminalStates: true,
  });
  // A one-time link shown once in the banner below (stdout, never the logger); only its hash is stored.
  const firstAdmin = await ensureFirstAdmin(db, env.LABDECK_ADMIN_EMAIL, { secret });
  setServices(platform.services);
  await platform.startBackground();

  const prepareError = await prepared;
  if (prepareError) throw prepareError;
  const { services } = platform;
  observeProcess({
    sessionsByState: async () =>
      Object.fromEntries((await db.labSession.groupBy({ by: ["state"], _count: true })).map((g) => [g.state, g._count])),
    pool: () => platform.machines.pool?.status() ?? null,
    graderLagMs: () => services.grader.lagMs(),
    dbPool: () => ({ total: dbPool.totalCount, idle: dbPool.idleCount, waiting: dbPool.waitingCount }),
  });
  const readiness = {
    pingDatabase: () => db.$queryRaw`SELECT 1`,
    machinesReady: () => true, // startMachines resolved: images found, providers started
    graderLagMs: () => services.grader.lagMs(),
    maxGraderLagMs: env.LABDECK_READY_MAX_GRADER_LAG_MS,
  };
  const server = createAppServer({
    ops: opsHandler({ readiness, metricsToken: env.LABDECK_METRICS_TOKEN }),
    allowedOrigin: platform.allowedOrigin,
    trustedProxies: env.LABDECK_TRUSTED_PROXIES,
    handle: app.getRequestHandler(),
    preview: (req, res) => platform.preview.handleRequest(req, res),
  });
  const nextUpgrade = app.getUpgradeHandler();
  server.on("upgrade", (req, socket, head) => {
    if (platform.preview.handleUpgrade(req, socket, head)) return;
    // Node reads heads up to MAX_HEADER_BYTES for previews' sake; Labdeck's own take APP_HEADER_BYTES.
    if (headerBytes(req) > APP_HEADER_BYTES)
      return void socket.end("HTTP/1.1 431 Request Header Fields Too Large\r\nConnection: close\r\n\r\n");
    if (platform.gateway.handle(req, socket, head)) return;
    // Next's dev server upgrades /_next/hmr itself; in production nothing else upgrades.
    if (dev) return void nextUpgrade(req, socket, head);
    socket.destroy();
  });
  // The admin listener: /metrics without a token (and the health paths), for a scraper on a
  // private address; never the app.
  const adminServer =
    env.LABDECK_METRICS_PORT === undefined
      ? null
      : http.createServer((req, res) => {
          if (!opsHandler({ readiness, metricsToken: undefined, metricsOpen: true })(req, res)) res.writeHead(404).end();
        });

  const port = await listen(server, env, platform);
  await listenAdmin(adminServer, env);
  const url = publicUrl(env, port);
  platform.listening(port);
  log.info({ url, machines: platform.machines.kind, database: embedded ? "embedded" : "external" }, "Labdeck is listening");
  if (firstAdmin) printFirstAdmin(firstAdmin, url, env.LABDECK_TIME_ZONE);
  // One plain line for people and scripts (e2e and bench read it to find the port).
  process.stdout.write(`LABDECK_READY ${url}\n`);
  stopOnSignals({ env, server, adminServer, platform, disconnect: () => db.$disconnect() });
}

/** Listens on HOST:PORT; on failure (a taken port) nothing will ever serve these machines, so what this process started goes. */
async function listen(server: http.Server, env: Env, platform: Platform): Promise<number> {
  try {
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(env.PORT, env.HOST, () => {
        server.off("error", reject);
        resolve();
      });
    });
  } catch (error) {
    // The pool's sets are detached processes and would outlive this one; the database stops.
    await platform.stop();
    await platform.services.db.$disconnect().catch(() => undefined);
    throw error;
  }
  const address = server.address();
  return typeof address === "object" && address ? address.port : env.PORT;
}

async function listenAdmin(adminServer: http.Server | null, env: Env): Promise<void> {
  if (!adminServer) return;
  await new Promise<void>((resolve, reject) => {
    adminServer.once("error", reject);
    adminServer.listen(env.LABDECK_METRICS_PORT, env.LABDECK_METRICS_HOST, () => resolve());
  });
  log.info({ host: env.LABDECK_METRICS_HOST, port: env.LABDECK_METRICS_PORT }, "metrics listener");
}

/** The first admin's one-time link; its expiry in the platform zone, as the UI shows times. */
function printFirstAdmin(firstAdmin: { email: string; token: string; expiresAt: Date }, url: string, timeZone: string): void {
  process.stdout.write(
    `\n  First admin account: open this one-time link to set its password (valid until ${zonedConsoleTime(firstAdmin.expiresAt, timeZone)};\n` +
      `  a restart before it is used prints a new one):\n` +
      `    email:    ${firstAdmin.email}\n    link:     ${url}/invite/${firstAdmin.token}\n\n`,
  );
}

/** SIGTERM, SIGINT and SIGHUP (the terminal that ran scripts/up.sh closed) drain, then stop everything this process started. */
function stopOnSignals(deps: {
  env: Env;
  server: http.Server;
  adminServer: http.Server | null;
  platform: Platform;
  disconnect: () => Promise<void>;
}): void {
  const { env, server, adminServer, platform } = deps;
  const responses = trackResponses(server);
  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info({ signal }, "shutting down");
    // A stop step that hangs must not keep the process (and the terminal) forever; the
    // database's watchdog stops PostgreSQL when this process is gone.
    setTimeout(() => {
      log.error({ seconds: (env.LABDECK_DRAIN_TIMEOUT_MS + STOP_LIMIT_MS) / 1000 }, "graceful stop did not finish; exiting");
      process.exit(1);
    }, env.LABDECK_DRAIN_TIMEOUT_MS + STOP_LIMIT_MS).unref();
    // Drain: accept no new connections, send browsers elsewhere at once (terminals: close code
    // 4503; event streams: ended with a short retry), let running checks finish and be recorded.
    server.close();
    server.closeIdleConnections();
    const streams = responses.endEventStreams();
    const { checks, drained } = await platform.drain(env.LABDECK_DRAIN_TIMEOUT_MS);
    log.info(
      { streams, checks, drained, timeoutMs: env.LABDECK_DRAIN_TIMEOUT_MS },
      drained ? "drained" : "drain timed out; checks left run again elsewhere when their claims lapse",
    );
    adminServer?.close();
    await platform.stop();
    await deps.disconnect().catch(() => undefined);
    await embedded?.stop().catch(() => undefined);
    process.exit(0);
  };
  process.on("SIGTERM", () => void stop("SIGTERM"));
  process.on("SIGINT", () => void stop("SIGINT"));
  process.on("SIGHUP", () => void stop("SIGHUP"));
}

// Logged with the stack (pino's err serializer); a value that is not an Error is logged as itself.
process.on("unhandledRejection", (reason) => log.error({ err: errorForLog(reason) }, "unhandled rejection"));
main().catch(async (error: unknown) => {
  log.fatal({ err: errorForLog(error) }, "start-up failed");
  process.stderr.write(`Labdeck could not start: ${startupFailureMessage(error)}\n`);
  await embedded?.stop().catch(() => undefined);
  process.exit(1);
});
