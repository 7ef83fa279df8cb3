/**
 * Test stack: real sshd hosts in network namespaces, a real embedded PostgreSQL with the
 * committed migrations, the platform as production composes it (server/compose/compose.ts) over
 * the static-hosts provider, and the terminal gateway on an HTTP server on a free loopback port.
 * Used by integration tests and the benchmarks.
 */
import { randomBytes } from "node:crypto";
import fs from "node:fs/promises";
import http from "node:http";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import type { Auth } from "../auth/auth";
import type { Provisioner } from "../cohorts/provision";
import type { WatchRegistry } from "../cohorts/watchers";
import { composePlatform } from "../compose/compose";
import type { PlatformBus } from "../compose/services";
import { parseEnv } from "../config";
import { createDb, type Db } from "../db/client";
import { examStartRequest, openAttempt } from "../exams/attempts";
import type { ExamScorer } from "../exams/scoring";
import type { Grader, GraderOptions } from "../grader/grader";
import type { LabCatalog } from "../labs/catalog";
import { runLabSetup } from "../labs/setup";
import { currentLabVersion } from "../labs/versions";
import { log } from "../log";
import type { MachineProvider } from "../machines/provider";
import { dbHostClaims, staticHostsProvider } from "../machines/static-hosts";
import type { TerminalRecorder } from "../recordings/recorder";
import { machineEndpoint, providerRefsInUse, startOrResumeSession } from "../sessions/lab-sessions";
import type { SessionSweeper } from "../sessions/sweeper";
import type { SshExecPool } from "../ssh/exec";
import type { TerminalAuthorizer } from "../terminal/gateway";
import type { TerminalRegistry } from "../terminal/registry";
import { signTerminalToken } from "../terminal/token";
import { startMigratedTestPostgres } from "./db-template";
import { createNetnsHosts, writeStaticHostsFile, type NetnsHostSet } from "./netns-hosts";

/** Re-exported for the tests and benches that take it from here. */
export { freePort } from "./free-port";

export const LAB_MACHINES = ["controlplane", "node01", "node02"] as const;

/** A gateway, grader and database over some machine provider (netns hosts, QEMU VMs). */
export interface Stack {
  /** ws://127.0.0.1:PORT/ws/terminal */
  wsUrl: string;
  db: Db;
  /** The embedded PostgreSQL's URL (for server processes a test starts itself). */
  databaseUrl: string;
  secret: Buffer;
  /** better-auth on the stack's database (users via server/auth/users.ts). */
  auth: Auth;
  provider: MachineProvider;
  terminals: TerminalRegistry;
  /** Records every terminal (64 MiB per session, 30 days); tests call flushAll() before reading. */
  recorder: TerminalRecorder;
  labs: LabCatalog;
  pool: SshExecPool;
  bus: PlatformBus;
  /** Not started; call grader.start() in tests that want polling. */
  grader: Grader;
  /** Not started; tests call sweep() with the time they want. Terminal input reaches activity(). */
  sweeper: SessionSweeper;
  watchers: WatchRegistry;
  /** Pre-provisioning jobs; not started (tests call startJob or resumeAbandoned). */
  provisioner: Provisioner;
  /** Exam hand-ins and scoring; not started (tests call tick() or scoreNow()). */
  exams: ExamScorer;
  /**
   * Starts (or resumes) a session of lab `slug` for `learnerId`. A lab that exists in the labs
   * directory gets its setup run; any other slug just gets the three machines.
   */
  startSession(learnerId: string, slug?: string): Promise<string>;
  token(sessionId: string, machine: string, mode?: "write" | "read", sub?: string): string;
  stop(): Promise<void>;
}

/** The stack over real sshd hosts in network namespaces (static-hosts provider). */
export interface TestStack extends Stack {
  hosts: NetnsHostSet;
}

/** @param subnet third octet of the hosts' 10.213.<subnet>.0/24; distinct per concurrent stack. */
/**
 * Fake at the far edge, for tests of the terminal path itself: accepts every socket whose token
 * verifies, without looking at the socket's sign-in. The authorization tests use "sign-in".
 */
const acceptSignedTokenOnly: TerminalAuthorizer = async () => null;

/** Options of every stack. */
interface StackOptions {
  labsDir?: string;
  grader?: GraderOptions;
  /** Idle time after which sweeps suspend sessions, ms (0: never). */
  idleMs?: number;
  /** How the gateway authorizes sockets: the token alone (default) or, as in production, also the sign-in cookie. */
  terminalAuth?: "token-only" | "sign-in";
  /** The platform secret (machine keys, tokens); default random. A server process sharing the rows needs the same. */
  secret?: Buffer;
}

export async function startTestStack(options: StackOptions & { subnet: number }): Promise<TestStack> {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), "labdeck-hosts-"));
  // One id per subnet: a crashed earlier run's leftovers on that subnet are cleaned up first.
  const hosts = await createNetnsHosts({ id: `s${options.subnet}`, names: [...LAB_MACHINES], subnet: options.subnet, dir });
  const cleanup = async () => {
    await hosts.destroy().catch((e: Error) => log.warn({ err: e.message }, "test stack cleanup"));
    await fs.rm(dir, { recursive: true, force: true });
  };
  try {
    const hostsFile = path.join(dir, "hosts.json");
    await writeStaticHostsFile(hosts, hostsFile, "shared");
    const stack = await startStack({
      ...options,
      provider: (db) =>
        staticHostsProvider({ file: hostsFile, groupsInUse: () => providerRefsInUse(db, "static"), claims: dbHostClaims(db) }),
    });
    return {
      ...stack,
      hosts,
      async stop() {
        await stack.stop();
        await cleanup();
      },
    };
  } catch (error) {
    await cleanup();
    throw error;
  }
}

/**
 * A real embedded PostgreSQL with the committed migrations, the grader, and the terminal gateway
 * on an HTTP server on a free loopback port, over the machine provider `provider` makes.
 */
export async function startStack(options: StackOptions & { provider: (db: Db) => MachineProvider }): Promise<Stack> {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), "labdeck-stack-"));
  await fs.chmod(dir, 0o711); // embedded PostgreSQL runs as user postgres and must enter it
  const cleanups: (() => Promise<unknown>)[] = [];
  const stop = async () => {
    for (const fn of cleanups.reverse()) await fn().catch((e: Error) => log.warn({ err: e.message }, "test stack cleanup"));
    await fs.rm(dir, { recursive: true, force: true });
  };
  try {
    const embedded = await startMigratedTestPostgres(path.join(dir, "data"));
    cleanups.push(() => embedded.stop());
    const db = createDb(embedded.url);
    cleanups.push(() => db.$disconnect());
    const secret = options.secret ?? randomBytes(32);
    // The production composition (server/compose/compose.ts) over this stack's database and provider.
    const env = parseEnv({
      LABDECK_DATA_DIR: dir,
      LABDECK_LABS_DIR: options.labsDir ?? path.resolve("labs"),
      LOG_LEVEL: process.env.LOG_LEVEL,
    });
    const platform = await composePlatform({
      env,
      db,
      databaseUrl: embedded.url,
      secret,
      log,
      settings: {
        grader: options.grader ?? {},
        idleMs: options.idleMs ?? 0,
        recorder: { maxSessionBytes: 64 * 1024 * 1024, retentionDays: 30 },
      },
      machines: async () => ({ kind: "static", provider: options.provider(db), pool: null, stop: async () => {} }),
      authorize: options.terminalAuth === "sign-in" ? undefined : acceptSignedTokenOnly,
    });
    cleanups.push(() => platform.stop());
    const { auth, provider, terminals, labs, pool, bus, grader, sweeper, watchers, provisioner, exams } = platform.services;
    const server = http.createServer((_req, res) => res.writeHead(404).end());
    server.on("upgrade", (req, socket, head) => {
      if (!platform.gateway.handle(req, socket, head)) socket.destroy();
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    cleanups.push(
      () =>
        new Promise<void>((resolve) => {
          platform.gateway.closeAll();
          server.closeAllConnections();
          server.close(() => resolve());
        }),
    );
    const port = (server.address() as net.AddressInfo).port;
    platform.listening(port);
    return {
      wsUrl: `ws://127.0.0.1:${port}/ws/terminal`,
      db,
      databaseUrl: embedded.url,
      secret,
      auth,
      provider,
      terminals,
      recorder: platform.recorder,
      labs,
      pool,
      bus,
      grader,
      sweeper,
      watchers,
      provisioner,
      exams,
      async startSession(learnerId, slug = "test-lab") {
        // As the session route does: a new session pins the lab's current version.
        const version = await currentLabVersion(db, labs, slug).catch(() => null);
        const lab = version?.lab ?? null;
        const session = await startOrResumeSession(
          db,
          provider,
          {
            learnerId,
            labSlug: slug,
            machines: lab?.manifest.machines ?? LAB_MACHINES,
            limitMinutes: 60,
            labVersion: version ? { hash: version.hash, firstStepId: version.lab.steps[0]?.id ?? null } : undefined,
            ...(lab ? examStartRequest(lab) : {}),
          },
          lab ? (sid) => runLabSetup(pool, lab, (m) => machineEndpoint(db, sid, m)) : undefined,
          { onStarted: (sid) => void (lab ? openAttempt(db, sid, learnerId, lab) : undefined) },
        );
        return session.id;
      },
      token: (sessionId, machine, mode = "write", sub = "tester") => signTerminalToken(secret, { sid: sessionId, m: machine, mode, sub }),
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}
