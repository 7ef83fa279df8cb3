/**
 * The Labdeck process: Next.js pages and API, plus the terminal WebSocket gateway on
 * TERMINAL_WS_PATH, in one HTTP server. Start-up: environment -> database (embedded PostgreSQL
 * unless DATABASE_URL) -> migrations -> services -> Next.js -> listen.
 */
import { configureMachineKeys, sealPlaintextMachineKeys } from "./server/machines/sealed-keys";
import http from "node:http";
import next from "next";
import { createAuth } from "./server/auth/auth";
import { terminalAuthorizer } from "./server/auth/terminal-access";
import { ensureFirstAdmin } from "./server/auth/invitations";
import { parseEnv, previewBase, publicUrl } from "./server/config";
import { previewAccess } from "./server/preview/access";
import { PreviewProxy } from "./server/preview/proxy";
import { Provisioner } from "./server/cohorts/provision";
import { WatchRegistry } from "./server/cohorts/watchers";
import { TerminalRecorder } from "./server/recordings/recorder";
import { EventBus } from "./server/events/bus";
import { Grader } from "./server/grader/grader";
import { SingletonRole } from "./server/leases/roles";
import { LabCatalog } from "./server/labs/catalog";
import { backfillLabVersions } from "./server/labs/pinned";
import { refuseUnbuiltImage } from "./server/machines/qemu/image-status";
import { SshExecPool } from "./server/ssh/exec";
import { createDbWithPool } from "./server/db/client";
import { startEmbeddedPostgres, type EmbeddedDatabase } from "./server/db/embedded";
import { migrateDeploy } from "./server/db/migrate";
import { log } from "./server/log";
import { startMachines } from "./server/compose/machines";
import { errorForLog, startupFailureMessage } from "./server/startup-failure";
import { loadSecret } from "./server/secret";
import { trackResponses } from "./server/http/drain";
import { createAppServer, originOf } from "./server/http/guard";
import { opsHandler } from "./server/ops/http";
import { observeProcess } from "./server/ops/metrics";
import { setServices, type PlatformPayloads } from "./server/compose/services";
import { machineEndpoint, machinePoweredOff } from "./server/sessions/lab-sessions";
import { SessionSweeper } from "./server/sessions/sweeper";
import { TerminalRegistry } from "./server/terminal/registry";
import { dbEpochStore } from "./server/terminal/epochs";
import { openTabs, tabIsOpen, terminalEndpoint } from "./server/sessions/tabs";
import { terminalUpgrade } from "./server/http/terminal-upgrade";

/**
 * Bound on a graceful stop after the drain (terminals, machines, database); a normal one takes
 * about a second. The whole stop is bounded by LABDECK_DRAIN_TIMEOUT_MS + this.
 */
const STOP_LIMIT_MS = 30_000;

/** Stopped when start-up fails after it started (a later step threw). */
let embedded: EmbeddedDatabase | null = null;

async function main(): Promise<void> {
  const env = parseEnv();
  let databaseUrl = env.DATABASE_URL;
  if (!databaseUrl) {
    embedded = await startEmbeddedPostgres(env.LABDECK_DATA_DIR, env.LABDECK_PG_PORT);
    databaseUrl = embedded.url;
  }
  await migrateDeploy(databaseUrl);
  const { db, pool: dbPool } = createDbWithPool(databaseUrl, env.LABDECK_DB_POOL_SIZE);
  const secret = await loadSecret(env.LABDECK_DATA_DIR, env.LABDECK_SECRET);
  configureMachineKeys(secret);
  const sealed = await sealPlaintextMachineKeys(db);
  if (sealed > 0) log.info({ machines: sealed }, "machine private keys stored before encryption were encrypted");
  const bus = new EventBus<PlatformPayloads>({ db, databaseUrl, log });
  const auth = createAuth({
    db,
    platformSecret: secret,
    baseURL: publicUrl(env),
    onSignInEnded: (userId) => bus.publishAccessChange(userId),
  });
  // A one-time link shown once in the banner below (stdout, never the logger); only its hash is stored.
  const firstAdmin = await ensureFirstAdmin(db, env.LABDECK_ADMIN_EMAIL, { secret });
  const labs = new LabCatalog(env.LABDECK_LABS_DIR);
  const pool = new SshExecPool();
  // The warm pool prepares labs' sets with their setup (labs, SSH) before anyone asks.
  const machines = await startMachines(env, db, log, { catalog: labs, exec: pool });
  const provider = machines.provider;
  const recorder = new TerminalRecorder(db, {
    maxSessionBytes: env.LABDECK_RECORDING_MAX_BYTES,
    retentionDays: env.LABDECK_RECORDING_RETENTION_DAYS,
    log,
  });
  const terminals = new TerminalRegistry(
    (sessionId, machine, number) => terminalEndpoint(db, sessionId, machine, number),
    (event) => log.info(event, "terminal state"),
    (sessionId, machine) => machinePoweredOff(db, provider, sessionId, machine),
    recorder,
    (sessionId, terminal) => dbEpochStore(db, sessionId, terminal),
  );
  const grader = new Grader(
    { db, labs, pool, bus, log },
    {
      intervalMs: env.LABDECK_GRADER_INTERVAL_MS,
      concurrency: env.LABDECK_GRADER_CONCURRENCY,
      retentionDays: env.LABDECK_CHECK_RETENTION_DAYS,
    },
  );
  const sweeper = new SessionSweeper({ db, provider, terminals, log }, { idleMs: env.LABDECK_IDLE_MINUTES * 60_000 });
  const watchers = new WatchRegistry({ db, bus });
  await bus.start({ progress: (id) => grader.progress(id), watchers: (id) => watchers.watchers(id), tabs: (id) => openTabs(db, id) });
  // A tab closed on another process: this process's terminals of it end too.
  bus.onAnyTabsChange(
    (sessionId) => void terminals.dropClosedTabs(sessionId, (sid, machine, number) => tabIsOpen(db, sid, machine, number)),
  );
  watchers.start();
  // Jobs a stopped process left running are resumed by whichever process holds them next.
  const provisioner = new Provisioner({ db, provider, labs, pool, bus, log });
  // One sweeper over all processes: a lease row, taken over when its holder stops renewing.
  const sweeperRole = new SingletonRole({ db, log }, "sweeper", {
    start: () => {
      sweeper.start();
      void sweeper.sweep();
    },
    stop: () => sweeper.stop(),
  });
  // Web preview origins (`<port>-<machine>-<session>.<preview host>`): their port is known once listening.
  let preview = previewBase(env);
  setServices({
    env,
    db,
    secret,
    auth,
    provider,
    terminals,
    labs,
    pool,
    bus,
    grader,
    sweeper,
    watchers,
    provisioner,
    refuseUnbuiltImage: (lab) => refuseUnbuiltImage({ provider, env }, lab),
    previewBase: () => preview,
  });
  // Starts and teardowns a dead predecessor left half-done are settled before serving.
  await sweeper.reconcile();
  // Sessions from before lab versions: pinned to the current lab, current step by step id.
  const backfill = await backfillLabVersions(db, labs);
  if (backfill.pinned > 0 || backfill.failed.length > 0)
    log.info({ pinned: backfill.pinned, failed: backfill.failed }, "lab versions backfilled");
  grader.start();
  sweeperRole.start();
  provisioner.start();
  recorder.startPruning();

  const dev = env.NODE_ENV !== "production";
  const app = next({ dev, dir: process.cwd(), hostname: env.HOST, port: env.PORT });
  await app.prepare();
  const handle = app.getRequestHandler();
  const nextUpgrade = app.getUpgradeHandler();

  observeProcess({
    sessionsByState: async () =>
      Object.fromEntries((await db.labSession.groupBy({ by: ["state"], _count: true })).map((g) => [g.state, g._count])),
    pool: () => machines.pool?.status() ?? null,
    graderLagMs: () => grader.lagMs(),
    dbPool: () => ({ total: dbPool.totalCount, idle: dbPool.idleCount, waiting: dbPool.waitingCount }),
  });
  const readinessSources = {
    pingDatabase: () => db.$queryRaw`SELECT 1`,
    machinesReady: () => true, // startMachines resolved: images found, providers started
    graderLagMs: () => grader.lagMs(),
    maxGraderLagMs: env.LABDECK_READY_MAX_GRADER_LAG_MS,
  };
  const ops = opsHandler({ readiness: readinessSources, metricsToken: env.LABDECK_METRICS_TOKEN });
  // The public origin, known once listening (PORT 0 picks one); state-changing /api requests and
  // terminal upgrades must come from it.
  let allowedOrigin = originOf(publicUrl(env));
  const previewProxy = new PreviewProxy({
    secret,
    base: () => preview,
    access: previewAccess(db),
    endpoint: (sessionId, machine) => machineEndpoint(db, sessionId, machine),
    log,
  });
  const server = createAppServer({
    ops,
    allowedOrigin: () => allowedOrigin,
    trustedProxies: env.LABDECK_TRUSTED_PROXIES,
    handle,
    preview: (req, res) => previewProxy.handleRequest(req, res),
  });
  const responses = trackResponses(server);
  // The admin listener: /metrics without a token (and the health paths), for a scraper on a
  // private address; never the app.
  const adminServer =
    env.LABDECK_METRICS_PORT === undefined
      ? null
      : http.createServer((req, res) => {
          if (!opsHandler({ readiness: readinessSources, metricsToken: undefined, metricsOpen: true })(req, res)) res.writeHead(404).end();
        });
  const gateway = terminalUpgrade({
    secret,
    terminals,
    log,
    onEnter: (sessionId) => grader.nudge(sessionId),
    onInput: (sessionId) => sweeper.activity(sessionId),
    authorize: terminalAuthorizer(auth, db),
    onViewer: watchers.onViewer,
    allowedOrigin: () => allowedOrigin,
  });
  // Sign-out, removal from a cohort, an ended cohort: this process re-decides that user's sockets.
  bus.onAccessChange((userId) => void gateway.recheckUser(userId));
  // A machine put back to a saved state (a reset): connections into it from before are dead
  // without knowing it; terminals re-attach and checks open a fresh SSH connection.
  bus.onMachineRestored(({ sessionId, machine }) => {
    void terminals.reconnectMachine(sessionId, machine);
    void machineEndpoint(db, sessionId, machine).then(
      (endpoint) => endpoint && pool.close(endpoint),
      () => undefined,
    );
  });
  server.on("upgrade", (req, socket, head) => {
    if (previewProxy.handleUpgrade(req, socket, head)) return;
    if (gateway.handle(req, socket, head)) return;
    // Next's dev server upgrades /_next/hmr itself; in production nothing else upgrades.
    if (dev) return void nextUpgrade(req, socket, head);
    socket.destroy();
  });

  try {
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(env.PORT, env.HOST, () => {
        server.off("error", reject);
        resolve();
      });
    });
  } catch (error) {
    // A taken port: nothing will ever serve these machines, so the pool's sets go now (they are
    // detached processes and would outlive this one) and the database stops.
    await Promise.all([sweeperRole.stop(), provisioner.stop()]);
    grader.stop();
    await machines.stop().catch(() => undefined);
    await db.$disconnect().catch(() => undefined);
    throw error;
  }
  if (adminServer) {
    await new Promise<void>((resolve, reject) => {
      adminServer.once("error", reject);
      adminServer.listen(env.LABDECK_METRICS_PORT, env.LABDECK_METRICS_HOST, () => resolve());
    });
    log.info({ host: env.LABDECK_METRICS_HOST, port: env.LABDECK_METRICS_PORT }, "metrics listener");
  }
  const address = server.address();
  const port = typeof address === "object" && address ? address.port : env.PORT;
  const url = publicUrl(env, port);
  allowedOrigin = originOf(url);
  preview = previewBase(env, port);
  log.info({ url, machines: machines.kind, database: embedded ? "embedded" : "external" }, "Labdeck is listening");
  if (firstAdmin) {
    process.stdout.write(
      `\n  First admin account: open this one-time link to set its password (valid until ${firstAdmin.expiresAt.toISOString()};\n` +
        `  a restart before it is used prints a new one):\n` +
        `    email:    ${firstAdmin.email}\n    link:     ${url}/invite/${firstAdmin.token}\n\n`,
    );
  }
  // One plain line for people and scripts (e2e and bench read it to find the port).
  process.stdout.write(`LABDECK_READY ${url}\n`);

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
    gateway.closeAll();
    const streams = responses.endEventStreams();
    // Gives the sweeper role and this process's provisioning jobs to another process at once.
    await Promise.all([sweeperRole.stop(), provisioner.stop()]);
    const checks = grader.checksInFlight;
    const drained = await grader.drain(env.LABDECK_DRAIN_TIMEOUT_MS);
    log.info(
      { streams, checks, drained, timeoutMs: env.LABDECK_DRAIN_TIMEOUT_MS },
      drained ? "drained" : "drain timed out; checks left run again elsewhere when their claims lapse",
    );
    pool.closeAll();
    previewProxy.closeAll();
    adminServer?.close();
    await watchers.stop();
    await bus.stop();
    await terminals.closeAll();
    await recorder.stop().catch(() => undefined);
    // Learners' VMs keep running (adopted on the next start); only unclaimed pool sets go.
    await machines.stop().catch(() => undefined);
    await db.$disconnect().catch(() => undefined);
    await embedded?.stop().catch(() => undefined);
    process.exit(0);
  };
  process.on("SIGTERM", () => void stop("SIGTERM"));
  process.on("SIGINT", () => void stop("SIGINT"));
  // The terminal that ran scripts/up.sh closed.
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
