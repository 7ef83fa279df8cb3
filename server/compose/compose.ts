/**
 * The composition root: builds the process's services once, in one place, for the server
 * (server.ts), the test stacks (server/testing/stack.ts) and the benchmarks. Everything below it
 * receives what it needs; nothing else news up a grader, a registry or a bus.
 *
 * Start-up order: the caller opens the database (openDatabase) and the secret, then
 * composePlatform builds the services and the machines, startBackground starts the background
 * roles, the caller listens (listening() then fixes the public origin), and stop() ends it all
 * in the reverse order, learners' machines kept.
 */
import type { Logger } from "pino";
import { createAuth } from "../auth/auth";
import { terminalAuthorizer } from "../auth/terminal-access";
import { Provisioner } from "../cohorts/provision";
import { WatchRegistry } from "../cohorts/watchers";
import { previewBase as previewBaseFromEnv, publicUrl, type Env } from "../config";
import type { Db } from "../db/client";
import { EventBus } from "../events/bus";
import { Grader, type GraderOptions } from "../grader/grader";
import { originOf } from "../http/guard";
import { terminalUpgrade, type TerminalUpgrade } from "../http/terminal-upgrade";
import { LabCatalog } from "../labs/catalog";
import { backfillLabVersions } from "../labs/pinned";
import { SingletonRole } from "../leases/roles";
import { refuseUnbuiltImage } from "../machines/qemu/image-status";
import { configureMachineKeys, sealPlaintextMachineKeys } from "../machines/sealed-keys";
import { previewAccess } from "../preview/access";
import type { PreviewBase } from "../preview/address";
import { PreviewProxy } from "../preview/proxy";
import { TerminalRecorder } from "../recordings/recorder";
import { machineEndpoint, machinePoweredOff } from "../sessions/lab-sessions";
import { prewarmRecentSessions } from "../sessions/prewarm";
import { ExamScorer, type ExamScorerOptions } from "../exams/scoring";
import { SessionSweeper } from "../sessions/sweeper";
import { openTabs, tabIsOpen, terminalEndpoint } from "../sessions/tabs";
import { SshExecPool } from "../ssh/exec";
import { dbEpochStore } from "../terminal/epochs";
import type { TerminalAuthorizer } from "../terminal/gateway";
import { TerminalRegistry } from "../terminal/registry";
import type { Machines } from "./machines";
import type { PlatformPayloads, Services } from "./services";

/** The grader's first claim waits this long after a start, ms: the open pages' terminals log in to the machines first (a check and a login in a one-vCPU TCG guest slow each other; an Enter still checks at once). */
const GRADER_START_DELAY_MS = 8_000;

/** What the platform is tuned by: from the environment in production (settingsFromEnv), chosen by tests. */
export interface PlatformSettings {
  grader: GraderOptions;
  /** Idle time after which sweeps suspend a session, ms (0: never). */
  idleMs: number;
  recorder: { maxSessionBytes: number; retentionDays: number };
  /** Exam hand-ins and scoring (default EXAM_SCORER_DEFAULTS). */
  exams?: ExamScorerOptions;
}

export function settingsFromEnv(env: Env): PlatformSettings {
  return {
    grader: {
      intervalMs: env.LABDECK_GRADER_INTERVAL_MS,
      concurrency: env.LABDECK_GRADER_CONCURRENCY,
      retentionDays: env.LABDECK_CHECK_RETENTION_DAYS,
      quietMaxMs: env.LABDECK_GRADER_QUIET_MAX_MS,
      startDelayMs: GRADER_START_DELAY_MS,
    },
    idleMs: env.LABDECK_IDLE_MINUTES * 60_000,
    recorder: { maxSessionBytes: env.LABDECK_RECORDING_MAX_BYTES, retentionDays: env.LABDECK_RECORDING_RETENTION_DAYS },
  };
}

export interface PlatformInput {
  env: Env;
  db: Db;
  databaseUrl: string;
  /** The platform secret: terminal tokens, sealed machine keys, the sign-in key. */
  secret: Buffer;
  log: Logger;
  settings: PlatformSettings;
  /** Starts the machines once the labs and the exec pool exist (production: startMachines in machines.ts). */
  machines(deps: { db: Db; labs: LabCatalog; pool: SshExecPool }): Promise<Machines>;
  /** How terminal sockets are authorized; default: the token and the socket's sign-in, as in production. */
  authorize?: TerminalAuthorizer;
  /** Logs every terminal state change (production); tests leave it off. */
  logTerminalStates?: boolean;
}

export interface Platform {
  services: Services;
  machines: Machines;
  recorder: TerminalRecorder;
  gateway: TerminalUpgrade;
  preview: PreviewProxy;
  /** The public origin sockets and state-changing requests must come from (known once listening). */
  allowedOrigin(): string;
  /** Call once listening: PORT 0 picks the port that the public URL and preview base then use. */
  listening(port: number): void;
  /** Settles what a dead predecessor left, then starts the grader, the sweeper role, provisioning and pruning. */
  startBackground(): Promise<void>;
  /** Stops taking work: closes terminal sockets (browsers reconnect elsewhere), hands roles over, lets checks finish. */
  drain(timeoutMs: number): Promise<{ checks: number; drained: boolean }>;
  /** Ends what this process holds (learners' machines keep running; unclaimed pool sets go). */
  stop(): Promise<void>;
}

/** Builds the services over an open database; starts the machines and the event bus. */
export async function composePlatform(input: PlatformInput): Promise<Platform> {
  const { env, db, secret, log, settings } = input;
  configureMachineKeys(secret);
  const sealed = await sealPlaintextMachineKeys(db);
  if (sealed > 0) log.info({ machines: sealed }, "machine private keys stored before encryption were encrypted");
  const bus = new EventBus<PlatformPayloads>({ db, databaseUrl: input.databaseUrl, log });
  let origin = originOf(publicUrl(env));
  let preview: PreviewBase = previewBaseFromEnv(env);
  const auth = createAuth({
    db,
    platformSecret: secret,
    baseURL: publicUrl(env),
    onSignInEnded: (userId) => bus.publishAccessChange(userId),
  });
  const labs = new LabCatalog(env.LABDECK_LABS_DIR);
  const pool = new SshExecPool();
  // The warm pool prepares labs' sets with their setup (labs, SSH) before anyone asks.
  const machines = await input.machines({ db, labs, pool });
  const provider = machines.provider;
  const recorder = new TerminalRecorder(db, { ...settings.recorder, log });
  const terminals = new TerminalRegistry(
    (sessionId, machine, number) => terminalEndpoint(db, sessionId, machine, number),
    input.logTerminalStates ? (event) => log.info(event, "terminal state") : undefined,
    (sessionId, machine) => machinePoweredOff(db, provider, sessionId, machine),
    recorder,
    (sessionId, terminal) => dbEpochStore(db, sessionId, terminal),
    pool,
  );
  const grader = new Grader({ db, labs, pool, bus, log }, settings.grader);
  const sweeper = new SessionSweeper({ db, provider, terminals, log }, { idleMs: settings.idleMs });
  const watchers = new WatchRegistry({ db, bus });
  // Jobs a stopped process left running are resumed by whichever process holds them next.
  const provisioner = new Provisioner({ db, provider, labs, pool, bus, log });
  // Exams past their deadline are handed in and scored by whichever process claims them.
  const exams = new ExamScorer(
    {
      db,
      pool,
      provider,
      labs,
      log,
      onHandIn: (learnerId) => void bus.publishAccessChange(learnerId),
      onChange: (sessionId) => void bus.publishSessionChange(sessionId),
    },
    settings.exams,
  );
  const services: Services = {
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
    exams,
    refuseUnbuiltImage: (lab) => refuseUnbuiltImage({ provider, env }, lab),
    previewBase: () => preview,
  };
  const gateway = terminalUpgrade({
    secret,
    terminals,
    log,
    onEnter: (sessionId) => grader.nudge(sessionId),
    onInput: (sessionId) => sweeper.activity(sessionId),
    authorize: input.authorize ?? terminalAuthorizer(auth, db),
    onViewer: watchers.onViewer,
    allowedOrigin: () => origin,
  });
  const previewProxy = new PreviewProxy({
    secret,
    base: () => preview,
    access: previewAccess(db),
    endpoint: (sessionId, machine) => machineEndpoint(db, sessionId, machine),
    log,
  });
  await bus.start({ progress: (id) => grader.progress(id), watchers: (id) => watchers.watchers(id), tabs: (id) => openTabs(db, id) });
  wireEvents({ bus, terminals, gateway, pool, db });
  watchers.start();

  return {
    services,
    machines,
    recorder,
    gateway,
    preview: previewProxy,
    allowedOrigin: () => origin,
    listening(port) {
      origin = originOf(publicUrl(env, port));
      preview = previewBaseFromEnv(env, port);
    },
    ...lifecycle({ services, machines, recorder, gateway, previewProxy, log }),
  };
}

/** Background work and the way out: what runs once the services exist, and the stop in reverse order. */
function lifecycle(parts: {
  services: Services;
  machines: Machines;
  recorder: TerminalRecorder;
  gateway: TerminalUpgrade;
  previewProxy: PreviewProxy;
  log: Logger;
}): Pick<Platform, "startBackground" | "drain" | "stop"> {
  const { services, machines, recorder, gateway, previewProxy, log } = parts;
  const { db, labs, grader, sweeper, provisioner, exams, pool, watchers, bus, terminals } = services;
  // One sweeper over all processes: a lease row, taken over when its holder stops renewing.
  const sweeperRole = new SingletonRole({ db, log }, "sweeper", {
    start: () => {
      sweeper.start();
      void sweeper.sweep();
    },
    stop: () => sweeper.stop(),
  });
  let draining: Promise<{ checks: number; drained: boolean }> | null = null;
  const drain = (timeoutMs: number) =>
    (draining ??= (async () => {
      gateway.closeAll();
      // Gives the sweeper role and this process's provisioning jobs to another process at once.
      await Promise.all([exams.stop(), sweeperRole.stop(), provisioner.stop()]);
      const checks = grader.checksInFlight;
      return { checks, drained: await grader.drain(timeoutMs) };
    })());
  return {
    async startBackground() {
      // Starts and teardowns a dead predecessor left half-done are settled before serving.
      await sweeper.reconcile();
      // Sessions from before lab versions: pinned to the current lab, current step by step id.
      const backfill = await backfillLabVersions(db, labs);
      if (backfill.pinned > 0 || backfill.failed.length > 0)
        log.info({ pinned: backfill.pinned, failed: backfill.failed }, "lab versions backfilled");
      grader.start();
      // The open pages reconnect as soon as this process listens: their shells are logged in to first.
      void prewarmRecentSessions(db, terminals, log).catch((error: Error) =>
        log.warn({ err: error.message }, "prewarm after start failed"),
      );
      sweeperRole.start();
      provisioner.start();
      exams.start();
      recorder.startPruning();
    },
    drain,
    async stop() {
      await drain(0);
      sweeper.stop();
      pool.closeAll();
      previewProxy.closeAll();
      await watchers.stop();
      await bus.stop();
      await terminals.closeAll();
      await recorder.stop().catch(() => undefined);
      // Learners' VMs keep running (adopted on the next start); only unclaimed pool sets go.
      await machines.stop().catch(() => undefined);
    },
  };
}

/** What crosses processes as events: tab closes, access changes, restored machines. */
function wireEvents(deps: {
  bus: EventBus<PlatformPayloads>;
  terminals: TerminalRegistry;
  gateway: TerminalUpgrade;
  pool: SshExecPool;
  db: Db;
}): void {
  const { bus, terminals, gateway, pool, db } = deps;
  // A tab closed on another process: this process's terminals of it end too.
  bus.onAnyTabsChange(
    (sessionId) => void terminals.dropClosedTabs(sessionId, (sid, machine, number) => tabIsOpen(db, sid, machine, number)),
  );
  // Sign-out, removal from a cohort, an ended cohort: this process re-decides that user's sockets.
  bus.onAccessChange((userId) => void gateway.recheckUser(userId));
  // A machine put back to a saved state (a reset): connections into it from before are dead
  // without knowing it; terminals re-attach and checks open a fresh SSH connection.
  bus.onMachineResetting(({ sessionId, machine }) => void terminals.holdMachine(sessionId, machine));
  bus.onMachineRestored(({ sessionId, machine }) => {
    void terminals.reconnectMachine(sessionId, machine);
    void machineEndpoint(db, sessionId, machine).then(
      (endpoint) => endpoint && pool.close(endpoint),
      () => undefined,
    );
  });
}
