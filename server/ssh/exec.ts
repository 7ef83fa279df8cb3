/**
 * Runs scripts on machines over SSH exec channels, apart from the learner's shell (never typed
 * into it). One SSH connection per machine is kept and shared by every run on it; a failed
 * connection is dropped and re-made on the next run.
 */
import type { Client } from "ssh2";
import { connectSsh, type SshEndpoint } from "./connect";

/**
 * How a script ended: exit 0 (pass), another exit (fail), killed at its timeout, the machine did
 * not answer, or anything else. The grader shows these as a check's outcome (grader/progress.ts).
 */
export type ScriptOutcome = "pass" | "fail" | "timeout" | "unreachable" | "error";

/** Most bytes of a script's output kept (a check's output shown to the learner); the rest is cut with a marker. */
export const SCRIPT_OUTPUT_MAX_BYTES = 4 * 1024;

/** A connection unused this long is closed, in ms. */
const IDLE_CLOSE_MS = 60_000;
/** Extra time the remote `timeout` gets to kill a check before we give up on it locally, in ms. */
const LOCAL_GRACE_MS = 5_000;
/** Seconds between `timeout`'s TERM and KILL for a check that ignores TERM. */
const KILL_AFTER_S = 2;

/**
 * The only PATH a script sees: the system directories root owns, in Debian's order. A learner's
 * own directories (/root/bin, /root/.local/bin, anything exported from /etc/environment, a
 * profile or ~/.bashrc) are never on it. /usr/local/bin stays because images install tools
 * there; like /usr/bin it is part of the machine's system, not of the login environment.
 */
export const SCRIPT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/**
 * The whole environment of a script (`env -i`): nothing sshd gives the login (PAM's
 * /etc/environment, SetEnv, the learner's shell exports, BASH_ENV, ENV) reaches it.
 */
export const SCRIPT_ENV: Readonly<Record<string, string>> = { PATH: SCRIPT_PATH, HOME: "/root", LANG: "C.UTF-8" };

/**
 * What runs a script read from stdin on a machine, killed after `timeoutSeconds`. sshd hands the
 * line to root's login shell, which may have read ~/.bashrc (Debian's bash does so for sshd) and
 * defined functions: every word is an absolute path, so no function, alias or PATH entry of the
 * login decides what runs. Tests run scripts through this same line (in a private mount namespace).
 */
export function scriptCommand(timeoutSeconds: number): string {
  const env = Object.entries(SCRIPT_ENV).map(([k, v]) => `${k}=${v}`);
  return [
    "/usr/bin/env",
    "-i",
    ...env,
    "/usr/bin/timeout",
    `--kill-after=${KILL_AFTER_S}s`,
    `${timeoutSeconds}s`,
    "/bin/bash",
    "--noprofile",
    "--norc",
    "-s",
  ].join(" ");
}

export interface ScriptResult {
  outcome: ScriptOutcome;
  exitCode: number | null;
  /** Output (stdout and stderr as they came), ANSI escapes removed, cut to SCRIPT_OUTPUT_MAX_BYTES. */
  output: string;
  durationMs: number;
}

export interface RunOptions {
  /**
   * Longest wait for the SSH handshake, ms (default: the script's timeout). Shorter for a machine
   * that is rebooting: QEMU's NAT holds a connection made while the guest is down, so a fresh try
   * reaches the new sshd sooner than a held one.
   */
  connectTimeoutMs?: number;
}

interface PooledConnection {
  client: Promise<Client>;
  lastUsed: number;
}

/** Why a pooled connection died (ssh2's error, e.g. "Keepalive timeout"), for a run it cut short. */
const lostBecause = new WeakMap<Client, string>();

export class SshExecPool {
  private readonly connections = new Map<string, PooledConnection>();
  /** Connections handed off (handOff) until taken or their time is up. */
  private readonly handed = new Map<string, { client: Promise<Client>; timer: NodeJS.Timeout }>();
  private readonly sweeper: NodeJS.Timeout;

  constructor() {
    this.sweeper = setInterval(() => this.closeIdle(), IDLE_CLOSE_MS);
    this.sweeper.unref();
  }

  /**
   * Runs `script` with bash on the machine in a clean environment (scriptCommand), killed after `timeoutSeconds`. Never throws: an
   * unreachable machine or a refused host key is an outcome like any other.
   */
  async run(endpoint: SshEndpoint, script: string, timeoutSeconds: number, options: RunOptions = {}): Promise<ScriptResult> {
    const started = Date.now();
    // A pooled connection can be dead without knowing it (the machine rebooted behind QEMU's NAT,
    // which keeps the host side of the TCP connection open): the exec request then fails before
    // anything ran, so one more try on a fresh connection is safe.
    const reused = this.connections.has(endpointKey(endpoint));
    const first = await this.attempt(endpoint, script, timeoutSeconds, started, options);
    if (!(first instanceof Error)) return first;
    const result = reused ? await this.attempt(endpoint, script, timeoutSeconds, started, options) : first;
    if (!(result instanceof Error)) return result;
    return { outcome: "unreachable", exitCode: null, output: `${endpoint.name}: ${result.message}`, durationMs: Date.now() - started };
  }

  /** One try; an Error when the exec request failed (nothing ran, the connection is dropped). */
  private async attempt(
    endpoint: SshEndpoint,
    script: string,
    timeoutSeconds: number,
    started: number,
    options: RunOptions,
  ): Promise<ScriptResult | Error> {
    const elapsed = () => Date.now() - started;
    let client: Client;
    try {
      // Connecting counts against the check's time: a machine that accepts TCP but never
      // finishes the SSH handshake must not hold a check longer than its timeout.
      client = await withTimeout(
        this.connection(endpoint),
        Math.min(timeoutSeconds * 1000, options.connectTimeoutMs ?? Infinity),
        "no SSH handshake in time",
      );
    } catch (error) {
      return {
        outcome: "unreachable",
        exitCode: null,
        output: `${endpoint.name}: ${(error as Error).message}`,
        durationMs: elapsed(),
      };
    }
    const command = scriptCommand(timeoutSeconds);
    return new Promise<ScriptResult | Error>((resolve) => {
      // A pooled client whose connection just closed throws "Not connected" at once: a failed
      // attempt like an exec error (nothing ran), so run() retries on a fresh connection.
      const exec = (fn: Parameters<Client["exec"]>[1]) => {
        try {
          client.exec(command, fn);
        } catch (error) {
          this.drop(endpoint);
          resolve(error as Error);
        }
      };
      exec((error, channel) => {
        if (error) {
          this.drop(endpoint);
          resolve(error);
          return;
        }
        const chunks: Buffer[] = [];
        let bytes = 0;
        const collect = (chunk: Buffer) => {
          if (bytes >= SCRIPT_OUTPUT_MAX_BYTES * 2) return; // keep a bounded amount; cut below
          chunks.push(chunk);
          bytes += chunk.length;
        };
        channel.on("data", collect);
        channel.stderr.on("data", collect);
        let exitCode: number | null = null;
        let settled = false;
        const finish = (outcome?: ScriptOutcome) => {
          if (settled) return;
          settled = true;
          clearTimeout(backstop);
          const output = cleanOutput(Buffer.concat(chunks));
          const timedOut = exitCode === 124 || exitCode === 137 || outcome === "timeout";
          resolve({
            outcome: outcome ?? (timedOut ? "timeout" : exitCode === 0 ? "pass" : "fail"),
            exitCode,
            output,
            durationMs: elapsed(),
          });
        };
        const backstop = setTimeout(
          () => {
            channel.close();
            finish("timeout");
          },
          timeoutSeconds * 1000 + LOCAL_GRACE_MS,
        );
        channel.on("exit", (code: number | null) => (exitCode = code));
        channel.on("close", () => {
          // No exit status: the connection went away under the script. Say why when ssh2 said.
          const why = exitCode === null ? lostBecause.get(client) : undefined;
          if (why) chunks.push(Buffer.from(`\n(SSH connection lost: ${why})`));
          finish(exitCode === null ? "unreachable" : undefined);
        });
        channel.end(script);
      });
    });
  }

  /** Closes the pooled connection to one machine (its next run connects afresh). */
  close(endpoint: SshEndpoint): void {
    if (this.connections.has(endpointKey(endpoint))) this.dropKey(endpointKey(endpoint));
  }

  closeAll(): void {
    clearInterval(this.sweeper);
    for (const key of [...this.connections.keys()]) this.dropKey(key);
    for (const key of [...this.handed.keys()]) this.endHanded(key);
  }

  /**
   * Leaves the pooled connection to a machine for its next taker (take) instead of the pool's next
   * run: a machine just restored has no other connection, and its terminal's own login would be
   * one more SSH handshake (2-4 s of a one-vCPU guest under TCG). Ended when not taken in `ttlMs`.
   */
  handOff(endpoint: SshEndpoint, ttlMs: number): void {
    const key = endpointKey(endpoint);
    const entry = this.connections.get(key);
    if (!entry) return;
    this.connections.delete(key);
    this.endHanded(key);
    const timer = setTimeout(() => this.endHanded(key), ttlMs);
    timer.unref();
    this.handed.set(key, { client: entry.client, timer });
  }

  /** The connection handed off for `endpoint`, once (the taker ends it); undefined when there is none. */
  take(endpoint: SshEndpoint): Promise<Client> | undefined {
    return this.takeKey(endpointKey(endpoint));
  }

  /** Ends the connection handed off under `key`, if any. */
  private endHanded(key: string): void {
    this.takeKey(key)?.then(
      (c) => c.end(),
      () => undefined,
    );
  }

  private takeKey(key: string): Promise<Client> | undefined {
    const handed = this.handed.get(key);
    if (!handed) return undefined;
    this.handed.delete(key);
    clearTimeout(handed.timer);
    return handed.client;
  }

  private connection(endpoint: SshEndpoint): Promise<Client> {
    const key = endpointKey(endpoint);
    const existing = this.connections.get(key);
    if (existing) {
      existing.lastUsed = Date.now();
      return existing.client;
    }
    // The listeners act on this entry only: a connection handed off (handOff) is no longer the key's.
    const mine = () => this.connections.get(key) === entry;
    const client = connectSsh(endpoint).then((c) => {
      c.on("error", (error: Error) => {
        lostBecause.set(c, error.message);
        if (mine()) this.dropKey(key);
      });
      c.on("close", () => mine() && this.connections.delete(key));
      return c;
    });
    client.catch(() => mine() && this.connections.delete(key));
    const entry: PooledConnection = { client, lastUsed: Date.now() };
    this.connections.set(key, entry);
    return client;
  }

  private drop(endpoint: SshEndpoint): void {
    this.dropKey(endpointKey(endpoint));
  }

  private dropKey(key: string): void {
    const entry = this.connections.get(key);
    this.connections.delete(key);
    entry?.client.then(
      (c) => c.end(),
      () => undefined,
    );
  }

  private closeIdle(): void {
    const now = Date.now();
    for (const [key, entry] of this.connections) if (now - entry.lastUsed > IDLE_CLOSE_MS) this.dropKey(key);
  }
}

function endpointKey(e: SshEndpoint): string {
  return `${e.user}@${e.host}:${e.port}#${e.hostKey}`;
}

/** Escape sequences (colours, cursor moves) mean nothing in the feedback box. */
const ANSI = /\u001b\[[0-?]*[ -/]*[@-~]|\u001b[()][A-Za-z0-9]|\u001b[=>]/g;

function cleanOutput(raw: Buffer): string {
  let text = raw.toString("utf8").replace(ANSI, "").replace(/\r\n?/g, "\n").trim();
  if (Buffer.byteLength(text) > SCRIPT_OUTPUT_MAX_BYTES) {
    text =
      Buffer.from(text)
        .subarray(0, SCRIPT_OUTPUT_MAX_BYTES)
        .toString("utf8")
        .replace(/\uFFFD$/, "") + "\n[…]";
  }
  return text;
}

function withTimeout<T>(promise: Promise<T>, ms: number, message: string): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(message)), ms);
    promise.then(
      (value) => {
        clearTimeout(timer);
        resolve(value);
      },
      (error: unknown) => {
        clearTimeout(timer);
        reject(error);
      },
    );
  });
}
