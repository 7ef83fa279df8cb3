/**
 * The holder as a file this server carries, and how it gets onto a machine that lacks it or runs
 * another version (static hosts; QEMU images bake it in, netns test hosts start it from here).
 * The version is the first 12 hex digits of the file's sha256, which the holder computes of itself
 * and reports in HELLO: any change to the file is an upgrade, with nothing to bump by hand.
 */
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import type { Client } from "ssh2";
import { log } from "../log";
import { connectSsh, type SshEndpoint } from "../ssh/connect";
import { HOLDER_PATH, HOLDER_SOCKET, connectHolder, type HolderLink } from "./client";

/**
 * The holder's path in this checkout, its bytes and its version; read on first use, not at import:
 * this module is reachable from pages (through the image recipes), and Next's bundler gives
 * `import.meta.url` URLs that `fileURLToPath` refuses as objects (hence `.href`).
 */
export function holderFile(): string {
  return fileURLToPath(new URL("./labdeck-holder", import.meta.url).href);
}
let source: Buffer | null = null;
export function holderSource(): Buffer {
  return (source ??= readFileSync(holderFile()));
}
export function holderVersion(): string {
  return createHash("sha256").update(holderSource()).digest("hex").slice(0, 12);
}
/** systemd unit name of the holder (image unit and transient unit alike). */
export const HOLDER_UNIT = "labdeck-holder";
/** How long a freshly started holder has to answer on its socket, in ms. */
const START_TIMEOUT_MS = 10_000;
const START_POLL_MS = 100;

/**
 * Shell run over SSH (as root) that installs the holder from stdin and (re)starts it outside the
 * SSH login: as a transient systemd unit when systemd is PID 1 (its own cgroup, so ending the
 * login or restarting sshd leaves it alone), else with `setsid -f` (a new session, reparented to
 * init). The process started is the holder's keeper, which runs the daemon and starts a new one
 * with the same shells if it dies hard (labdeck-holder's header). An old holder (its daemon's pid
 * from HELLO; a keeper ends with its daemon's clean exit) is stopped first: the shells it held end; unless it
 * runs from `installPath` and can upgrade in place (`inPlace`, from its HELLO): then it is sent
 * SIGUSR2 and execs the new file with its shells kept (labdeck-holder's header).
 */
export function installScript(options: { installPath: string; socketPath: string; oldPid?: number; inPlace?: boolean }): string {
  const { installPath, socketPath, oldPid, inPlace } = options;
  const q = (s: string) => `'${s.replaceAll("'", "'\\''")}'`;
  const command = `"$(command -v python3)" ${q(installPath)} --socket ${q(socketPath)}`;
  return [
    "set -eu",
    "command -v python3 >/dev/null || { echo 'python3 is missing' >&2; exit 3; }",
    `mkdir -p "$(dirname ${q(installPath)})"`,
    `cat > ${q(installPath + ".new")}`,
    `chmod 0755 ${q(installPath + ".new")}`,
    `mv ${q(installPath + ".new")} ${q(installPath)}`,
    // The old holder runs from this file and can upgrade in place: it execs the new file keeping its shells.
    ...(inPlace && oldPid ? [`kill -USR2 ${oldPid}`, "exit 0"] : []),
    "if [ -d /run/systemd/system ] && command -v systemd-run >/dev/null; then",
    `  systemctl stop ${HOLDER_UNIT}.service 2>/dev/null || true`,
    `  systemctl reset-failed ${HOLDER_UNIT}.service 2>/dev/null || true`,
    oldPid ? `  kill ${oldPid} 2>/dev/null || true` : "  :",
    `  systemd-run --quiet --unit=${HOLDER_UNIT} --collect ${command}`,
    "else",
    oldPid ? `  kill ${oldPid} 2>/dev/null && sleep 0.3 || true` : "  :",
    `  setsid -f ${command} </dev/null >/dev/null 2>&1`,
    "fi",
  ].join("\n");
}

function exec(client: Client, command: string, stdin?: Buffer): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve, reject) => {
    client.exec(command, (error, channel) => {
      if (error) return reject(error);
      let output = "";
      channel.on("data", (d: Buffer) => (output += d.toString()));
      channel.stderr.on("data", (d: Buffer) => (output += d.toString()));
      channel.on("exit", (code: number | null) => resolve({ code, output }));
      channel.on("close", () => resolve({ code: null, output }));
      channel.end(stdin);
    });
  });
}

/**
 * Returns a link to the machine's holder, installing or upgrading it first when it is missing or
 * its version differs from this server's. Throws when the machine cannot run it (no python3).
 */
export async function ensureHolder(client: Client, options: { socketPath?: string; installPath?: string } = {}): Promise<HolderLink> {
  const socketPath = options.socketPath ?? HOLDER_SOCKET;
  const installPath = options.installPath ?? HOLDER_PATH;
  const existing = await connectHolder(client, { socketPath, holderPath: installPath }).catch(() => null);
  if (existing && existing.hello!.version === holderVersion()) return existing;
  if (existing && refusedThisVersion(existing)) return existing; // tried already: no retry per session
  existing?.close();
  const inPlace = existing?.hello?.handover === true && existing.hello.path === installPath;
  const script = installScript({ installPath, socketPath, oldPid: existing?.hello?.pid, inPlace });
  const installed = await exec(client, script, holderSource());
  if (installed.code !== 0) throw new Error(`installing the terminal holder failed (exit ${installed.code}): ${installed.output.trim()}`);
  const deadline = Date.now() + START_TIMEOUT_MS;
  let last: Error | undefined;
  while (Date.now() < deadline) {
    try {
      const link = await connectHolder(client, { socketPath, holderPath: installPath });
      if (link.hello!.version === holderVersion()) return link;
      if (inPlace && refusedThisVersion(link)) return link;
      link.close(); // the old one is still going away
    } catch (error) {
      last = error as Error;
    }
    await new Promise((r) => setTimeout(r, START_POLL_MS));
  }
  throw new Error(`the terminal holder did not start within ${START_TIMEOUT_MS} ms${last ? `: ${last.message}` : ""}`);
}

/**
 * The machine's holder tried this server's version in place and it failed to take over: the
 * previous version went on with every shell (labdeck-holder's upgrade guard). It is used as it is,
 * the same protocol, rather than ended with the learners' shells; the failure is logged.
 */
function refusedThisVersion(link: HolderLink): boolean {
  const refused = link.hello!.refusedUpgrade;
  if (refused?.version !== holderVersion()) return false;
  log.error(
    { running: link.hello!.version, refused: refused.version, reason: refused.reason },
    "this server's terminal holder failed to take over in place; the machine keeps its previous holder and its shells",
  );
  return true;
}

/**
 * Makes sure a machine runs this server's holder (installing or upgrading it), over its own SSH
 * connection. Never throws: a machine where it fails keeps the direct PTY; the reason is logged.
 */
export async function prepareHolder(endpoint: SshEndpoint): Promise<boolean> {
  let client: Client | undefined;
  try {
    client = await connectSsh(endpoint);
    const link = await ensureHolder(client);
    log.debug({ machine: endpoint.name, version: link.hello?.version }, "terminal holder ready");
    link.close();
    return true;
  } catch (error) {
    log.warn({ machine: endpoint.name, err: (error as Error).message }, "terminal holder unavailable; terminals use the direct PTY");
    return false;
  } finally {
    client?.end();
  }
}
