/**
 * The server for VM-backed e2e: the server bundle in production mode (run `npm run build` first) on its own
 * port, with QEMU machines (TCG unless LABDECK_QEMU_ACCEL says otherwise), sets prepared for the
 * walked lab (one per test), embedded PostgreSQL and a throw-away data directory whose `images`
 * is the cached test image (server/machines/qemu/test-image.ts). Ready only once the pool holds
 * them, so each page gets machines at once. `restart()` crashes or stops it and starts it again. `stop()` stops the server gracefully, removes the VMs learners'
 * sessions and the pool's spares still hold (the server keeps both on purpose, to adopt them after
 * a restart) and fails when any QEMU or vde_switch process of the run is left.
 *
 *   <tmp>/labdeck-e2e-vm-XXXXXX/   runner.pid (the test process that owns the run)
 *                                  data/       LABDECK_DATA_DIR; data/images -> the image cache
 */
import { spawn, type ChildProcess } from "node:child_process";
import { createWriteStream } from "node:fs";
import fs from "node:fs/promises";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import readline from "node:readline";
import pino from "pino";
import { z } from "zod";
import { imagesDir } from "../../server/machines/qemu/image";
import { acceptFirstAdminLink, adminLoginFile } from "../accounts";
import { isAlive, processArgv, terminate } from "../../server/machines/qemu/processes";
import { qemuProvider } from "../../server/machines/qemu/provider";
import { TEST_IMAGE_CACHE_DIR, testImage } from "../../server/machines/qemu/test-image";

/** Prefix of run directories under the OS temp dir; leftovers of dead runs are cleaned by prefix. */
const RUN_DIR_PREFIX = "labdeck-e2e-vm-";
/**
 * From spawning the server to a booted pool set, in ms. Measured: 65-75 s for 3 VMs under TCG on
 * 2 shared cores (longer when the host is busy); the rest is room for a loaded CI host.
 */
export const POOL_READY_TIMEOUT_MS = 10 * 60_000;
/** How long the server gets for its graceful stop (pool teardown, embedded PostgreSQL), in ms. */
const STOP_TIMEOUT_MS = 60_000;
/** SIGTERM-to-SIGKILL grace for leftover processes, in ms. */
const KILL_GRACE_MS = 3_000;
/** argv[0] of the processes a VM run must not leave behind. */
const QEMU_OR_SWITCH = /(^|\/)(qemu-system-[a-z0-9_]+|vde_switch)$/;
/** The production server (npm run build makes it): restarts are measured on what runs in production. */
const SERVER_BUNDLE = "dist/server.mjs";
/** Sets prepared for the walked lab before the tests start (one per test that opens it). */
const PREPARED_SETS = 2;
/** Server output lines kept for an error message when start-up fails. */
const TAIL_LINES = 40;
/** Where the server's log goes (kept after the run; .test-reports/ is git-ignored). */
export const SERVER_LOG = path.resolve(".test-reports/e2e-vm-server.log");

/** The pino lines the start-up waits for (server.ts, warm-pool.ts, select.ts). */
const LogLine = z.object({ level: z.number(), msg: z.string(), err: z.string().optional() }).passthrough();

export interface VmServerTimings {
  /** Spawn to `LABDECK_READY` (database, migrations, Next.js), ms. */
  listeningMs: number;
  /** Spawn to every prepared set booted (or restored) and SSH-ready, ms. */
  poolReadyMs: number;
}

export interface StopReport {
  /** QEMU sessions removed after the server had stopped (learners' sessions, a pool set caught mid-boot). */
  removedSessions: string[];
  /** SIGTERM to the server's exit, ms. */
  serverStopMs: number;
  /** Whether the server needed SIGKILL after STOP_TIMEOUT_MS. */
  killed: boolean;
}

export interface VmServer {
  url: string;
  /** LABDECK_DATA_DIR of the run. */
  dataDir: string;
  timings: VmServerTimings;
  /**
   * Ends the server (`SIGKILL`: a crash; `SIGINT`: a clean stop, waited for) and starts it again
   * on the same data directory and port; resolves when the new process listens, with the ms from
   * its spawn to listening.
   */
  restart(signal: "SIGKILL" | "SIGINT"): Promise<{ listeningMs: number; listeningAt: number }>;
  /** The current server process's log lines so far (pino JSON, parsed; other lines skipped). */
  logLines(): { msg: string; [key: string]: unknown }[];
  /** Stops the server and removes every VM of the run; throws when a process of the run is left. */
  stop(): Promise<StopReport>;
}

export async function startVmServer(options: { port: number }): Promise<VmServer> {
  await removeDeadRuns();
  for (const port of [options.port, options.port + 1]) {
    if (!(await portFree(port)))
      throw new Error(
        `e2e vm server: 127.0.0.1:${port} is in use (the server takes ${options.port}, its PostgreSQL ${options.port + 1}; E2E_VM_PORT moves both)`,
      );
  }
  const image = await testImage();
  const runDir = await fs.mkdtemp(path.join(os.tmpdir(), RUN_DIR_PREFIX));
  await fs.chmod(runDir, 0o711); // embedded PostgreSQL runs as user postgres and must enter it
  await fs.writeFile(path.join(runDir, "runner.pid"), `${process.pid}\n`);
  const dataDir = path.join(runDir, "data");
  await fs.mkdir(dataDir, { mode: 0o711 });
  await fs.symlink(imagesDir(TEST_IMAGE_CACHE_DIR), imagesDir(dataDir));

  await fs.mkdir(path.dirname(SERVER_LOG), { recursive: true });
  const logFile = createWriteStream(SERVER_LOG);
  const spawnServer = () =>
    spawn(process.execPath, [SERVER_BUNDLE], {
      env: serverEnv(options.port, dataDir),
      stdio: ["ignore", "pipe", "pipe"],
    });
  const started = Date.now();
  let server = spawnServer();
  server.stderr!.pipe(logFile, { end: false });
  let lines = collectLines(server);
  const stop = () => stopRun(server, runDir, dataDir);
  const restart = async (signal: "SIGKILL" | "SIGINT") => {
    const exited = new Promise((r) => server.once("exit", r));
    server.kill(signal);
    await exited;
    const spawned = Date.now();
    server = spawnServer();
    server.stderr!.pipe(logFile, { end: false });
    lines = collectLines(server);
    await waitUntilListening(server, logFile);
    return { listeningMs: Date.now() - spawned, listeningAt: Date.now() };
  };

  try {
    await fs.rm(adminLoginFile(options.port), { force: true });
    const ready = await waitUntilReady(server, logFile, started, adminLoginFile(options.port));
    console.log(
      `e2e vm server: image ${image.hash}, listening after ${ready.timings.listeningMs} ms, pool set ready after ${ready.timings.poolReadyMs} ms`,
    );
    return { url: ready.url, dataDir, timings: ready.timings, restart, logLines: () => lines, stop };
  } catch (error) {
    await stop().catch((stopError: Error) => console.error(`e2e vm server: clean-up after failed start: ${stopError.message}`));
    throw error;
  }
}

/** The server's environment: production mode, QEMU machines, PREPARED_SETS prepared sets of the walked lab. */
function serverEnv(port: number, dataDir: string): NodeJS.ProcessEnv {
  return {
    ...process.env,
    NODE_ENV: "production",
    PORT: String(port),
    HOST: "127.0.0.1",
    LABDECK_DATA_DIR: dataDir,
    LABDECK_PG_PORT: String(port + 1),
    LABDECK_MACHINES: "qemu",
    // Two sets prepared for the walked lab (booted, its setup run, its state saved; the second
    // restored from the first's template in seconds): each click gets one with nothing left to
    // run, as an operator sets a class up ("make up front" 2). No reserve: a set taken is not
    // replaced, so no refill boots beside the walk (the warm pool's refill has tests of its own,
    // server/machines/warm-pool.vm.test.ts).
    LABDECK_POOL_SIZE: "0",
    LABDECK_POOL_LABS: `preinstall-checks:0:${PREPARED_SETS}`,
    LABDECK_QEMU_ACCEL: process.env.LABDECK_QEMU_ACCEL ?? "tcg",
  };
}

/** Every pino line the process prints, parsed, as it comes. */
function collectLines(server: ChildProcess): { msg: string; [key: string]: unknown }[] {
  const parsed: { msg: string; [key: string]: unknown }[] = [];
  readline.createInterface({ input: server.stdout! }).on("line", (line) => {
    const entry = LogLine.safeParse(safeJson(line));
    if (entry.success) parsed.push(entry.data);
  });
  return parsed;
}

/** A restarted server's output to the log until it listens; fails when it exits first or takes 2 minutes. */
function waitUntilListening(server: ChildProcess, logFile: NodeJS.WritableStream): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error("the restarted server was not listening after 120 s")), 120_000);
    server.once("exit", (code, signal) => reject(new Error(`the restarted server exited (code ${code}, signal ${signal})`)));
    readline.createInterface({ input: server.stdout! }).on("line", (line) => {
      logFile.write(`${line}\n`);
      if (!line.startsWith("LABDECK_READY ")) return;
      clearTimeout(timer);
      resolve();
    });
  });
}

/** Reads the server's stdout until it listens and its pool holds a set; fails on exit, a failed refill or the timeout. */
function waitUntilReady(
  server: ChildProcess,
  logFile: NodeJS.WritableStream,
  started: number,
  /** Where the first admin's login goes when the server prints it. */
  adminFile: string,
): Promise<{ url: string; timings: VmServerTimings }> {
  const tail: string[] = [];
  let url: string | undefined;
  let listeningMs: number | undefined;
  let poolReadyMs: number | undefined;
  let setsReady = 0;
  return new Promise((resolve, reject) => {
    const fail = (reason: string) => {
      clearTimeout(timer);
      reject(new Error(`${reason}\n--- last server output (full log: ${SERVER_LOG}) ---\n${tail.join("\n")}`));
    };
    const timer = setTimeout(
      () => fail(`the server was not listening with a booted pool set after ${POOL_READY_TIMEOUT_MS / 1000} s`),
      POOL_READY_TIMEOUT_MS,
    );
    const onExit = (code: number | null, signal: NodeJS.Signals | null) =>
      fail(`server.ts exited during start-up (code ${code}, signal ${signal})`);
    server.once("exit", onExit);
    // Either may come first: the pool starts booting before Next.js prepares, and three TCG
    // boots slow that preparation down.
    const settleWhenBoth = () => {
      if (url === undefined || listeningMs === undefined || poolReadyMs === undefined) return;
      clearTimeout(timer);
      server.off("exit", onExit);
      resolve({ url, timings: { listeningMs, poolReadyMs } });
    };
    const admin: { email?: string; link?: string } = {};
    const lines = readline.createInterface({ input: server.stdout! });
    lines.on("line", (line) => {
      logFile.write(`${line}\n`);
      tail.push(line);
      if (tail.length > TAIL_LINES) tail.shift();
      // The first admin's one-time link, printed once at the first start: followed once to set a
      // password, the login kept for e2e/accounts.ts.
      const login = /^\s+(email|link):\s+(\S+)$/.exec(line);
      if (login) {
        admin[login[1] as "email" | "link"] = login[2]!;
        if (admin.email && admin.link) {
          void acceptFirstAdminLink(admin.link, admin.email).then(
            (done) => fs.writeFile(adminFile, JSON.stringify(done), { mode: 0o600 }),
            (error: Error) => tail.push(`first admin link: ${error.message}`),
          );
        }
      }
      const ready = /^LABDECK_READY (\S+)$/.exec(line);
      if (ready) {
        url = ready[1];
        listeningMs = Date.now() - started;
        return settleWhenBoth();
      }
      const parsed = LogLine.safeParse(safeJson(line));
      if (!parsed.success) return;
      const { msg, err } = parsed.data;
      if (poolReadyMs !== undefined) return;
      if (msg === "warm pool refill failed") return fail(`the warm pool could not boot a set: ${err ?? "(no message)"}`);
      if (msg.startsWith("no lab image yet")) return fail("the server found no lab image under its data directory");
      if (msg === "warm pool set ready" || msg === "warm pool prepared set ready") {
        if (++setsReady < PREPARED_SETS) return;
        poolReadyMs = Date.now() - started;
        settleWhenBoth();
      }
    });
  });
}

/** Whether a loopback TCP port can be listened on now. */
function portFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const probe = net.createServer();
    probe.once("error", () => resolve(false));
    probe.listen(port, "127.0.0.1", () => probe.close(() => resolve(true)));
  });
}

function safeJson(line: string): unknown {
  try {
    return JSON.parse(line);
  } catch {
    return null;
  }
}

/**
 * Ends a run: the server's graceful stop (SIGKILL after STOP_TIMEOUT_MS), then the QEMU
 * provider's own clean-up for every session left in the data directory, then any process still
 * naming the run directory (embedded PostgreSQL after a SIGKILL). Throws when the provider's
 * clean-up missed a QEMU or vde_switch process (after ending it) or a process survives SIGKILL.
 */
async function stopRun(server: ChildProcess, runDir: string, dataDir: string): Promise<StopReport> {
  const started = Date.now();
  let killed = false;
  if (server.exitCode === null && server.signalCode === null) {
    const exited = new Promise((r) => server.once("exit", r));
    server.kill("SIGTERM");
    const timer = setTimeout(() => {
      killed = true;
      server.kill("SIGKILL");
    }, STOP_TIMEOUT_MS);
    await exited;
    clearTimeout(timer);
  }
  const serverStopMs = Date.now() - started;
  const removedSessions = await removeMachines(dataDir);
  const missed = await killProcessesNaming(runDir);
  const left = await processesNaming(runDir);
  if (left.length > 0) throw new Error(`processes of the e2e VM run survived SIGKILL: ${left.join(", ")} (run directory ${runDir} kept)`);
  await fs.rm(runDir, { recursive: true, force: true });
  const machines = missed.filter((p) => QEMU_OR_SWITCH.test(p.argv0));
  if (machines.length > 0) {
    throw new Error(`the QEMU provider's clean-up missed ${machines.map((p) => `${p.argv0} (pid ${p.pid})`).join(", ")}; killed by pid`);
  }
  return { removedSessions, serverStopMs, killed };
}

/** Ends every process naming `dir` (a SIGKILLed server's PostgreSQL, anything a clean-up missed); returns what it ended. */
async function killProcessesNaming(dir: string): Promise<{ pid: number; argv0: string }[]> {
  const ended: { pid: number; argv0: string }[] = [];
  for (const pid of await processesNaming(dir)) {
    const argv = (await processArgv(pid)) ?? [];
    const marker = argv.find((arg) => arg.includes(dir));
    if (!marker) continue;
    await terminate(pid, marker, KILL_GRACE_MS);
    ended.push({ pid, argv0: argv[0] ?? "" });
  }
  return ended;
}

/** Removes every QEMU session under a data directory with the provider's own teardown; returns their ids. */
async function removeMachines(dataDir: string): Promise<string[]> {
  const provider = qemuProvider({ dataDir, log: pino({ level: "silent" }) });
  const report = await provider.adoptOrCleanup({ keep: () => false, spares: false });
  return report.cleaned;
}

/** Pids of live processes with an argument inside `dir`. */
async function processesNaming(dir: string): Promise<number[]> {
  const prefix = path.resolve(dir) + "/";
  const pids: number[] = [];
  for (const entry of await fs.readdir("/proc")) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    const argv = await processArgv(Number(entry));
    if (argv?.some((arg) => arg.includes(prefix)) && (await isAlive(Number(entry)))) pids.push(Number(entry));
  }
  return pids;
}

/** Runs whose test process died without stopping them (a killed worker): their VMs and files go. */
async function removeDeadRuns(): Promise<void> {
  const tmp = os.tmpdir();
  for (const name of await fs.readdir(tmp)) {
    if (!name.startsWith(RUN_DIR_PREFIX)) continue;
    const runDir = path.join(tmp, name);
    const owner = Number((await fs.readFile(path.join(runDir, "runner.pid"), "utf8").catch(() => "")).trim());
    if (Number.isInteger(owner) && owner > 0 && (await isAlive(owner))) continue;
    console.log(`e2e vm server: removing the leftovers of a dead run in ${runDir}`);
    const removed = await removeMachines(path.join(runDir, "data"));
    if (removed.length > 0) console.log(`e2e vm server: removed sessions ${removed.join(", ")}`);
    await killProcessesNaming(runDir);
    await fs.rm(runDir, { recursive: true, force: true });
  }
}
