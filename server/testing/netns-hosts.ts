import { execFile, spawn, type ChildProcess } from "node:child_process";
import fs from "node:fs/promises";
import { openSync, closeSync } from "node:fs";
import net from "node:net";
import path from "node:path";
import { log } from "../log";
import { holderFile } from "../holder/install";

/**
 * Test/dev harness: N real OpenSSH servers, each in its own Linux network namespace (own IPv4
 * address), UTS namespace (own hostname) and mount namespace (own /root on tmpfs), with its own
 * ed25519 host key. They share the rest of this machine's filesystem and its kernel: nothing run
 * on them may change /etc, swap, modules or global sysctls (real lab work needs QEMU VMs). Needs root,
 * iproute2, util-linux `unshare` and openssh-server.
 *
 * Layout for set `id`, host index i (0-based), subnet S:
 *   namespace  ld-<id>-<name>
 *   veth pair  ld<id>h<i> (host side, 10.213.S.(4i+1)/30)  <->  eth0 in the namespace (10.213.S.(4i+2)/30)
 *   files      <dir>/id_ed25519{,.pub}, <dir>/authorized_keys (client key shared by the set)
 *              <dir>/ld-<id>-<name>/{ssh_host_ed25519_key{,.pub},sshd_config,sshd.pid,sshd.log}
 */

export interface NetnsHost {
  name: string;
  /** IPv4 address inside its namespace, reachable from the root namespace. */
  host: string;
  /** Always 22. */
  port: number;
  /** Always "root". */
  user: string;
  privateKeyPath: string;
  /** OpenSSH PEM text of the client key. */
  privateKey: string;
  /** Host public key, OpenSSH one-line "ssh-ed25519 AAAA..." without comment. */
  hostKey: string;
  namespace: string;
  /** sshd pid (the listener); changes when restartSshd() starts a new one. */
  pid: number;
  /** pid of the terminal holder's daemon (server/holder/: what its HELLO says) on this host, if one was started. */
  holderPid?: number;
  /** pid of the holder's keeper (the process started, parent of the daemon; its --pid-file), if one was started. */
  keeperPid?: number;
}

export interface NetnsHostSet {
  id: string;
  dir: string;
  hosts: NetnsHost[];
  /**
   * Stops the host's sshd listener (and with `killSessions` every per-connection sshd, which ends
   * every SSH login on it) and starts a fresh one in the same namespaces, as `systemctl restart
   * ssh` would. Needs the host's holder (its namespaces are entered through its pid).
   */
  restartSshd(name: string, options?: { killSessions?: boolean }): Promise<void>;
  /** Kills every process in the set's namespaces, deletes namespaces and links. Idempotent. */
  destroy(): Promise<void>;
}

/** Absolute path of the OpenSSH server binary. */
const SSHD = "/usr/sbin/sshd";
/**
 * Command line of an sshd this module started, as plain argv or as retitled by sshd itself
 * ("sshd: /usr/sbin/sshd -D -e -f <config> [listener] ..."); group 1 is the config path.
 */
const SSHD_COMMAND_LINE = new RegExp(`^(?:sshd: )?${SSHD} -D -e -f (\\S+)(?: |$)`);
/** Privilege-separation directory sshd insists on (shared by all namespaces: `ip netns exec` only remounts /sys). */
const SSHD_PRIVSEP_DIR = "/run/sshd";
/** Port every host's sshd listens on. */
const SSH_PORT = 22;
/** First two octets of the harness's address space: 10.213.<subnet>.0/24. */
const ADDRESS_PREFIX = "10.213";
/** Addresses per host: a /30 (network, host side, namespace side, broadcast). */
const ADDRESSES_PER_HOST = 4;
/** Most hosts one /24 holds at 4 addresses each. */
const MAX_HOSTS = 256 / ADDRESSES_PER_HOST;
/** Linux IFNAMSIZ - 1: longest interface name the kernel accepts, in characters. */
const MAX_IFNAME_LENGTH = 15;

/** Socket and log directories of the terminal holder (server/holder/labdeck-holder defaults). */
const HOLDER_RUN_DIR = "/run/labdeck-holder";
const HOLDER_STATE_DIR = "/var/lib/labdeck-holder";
/** Debian's python3, the one an SSH login on these hosts finds on its PATH too. */
const HOLDER_PYTHON = "/usr/bin/python3";
/** How long the holder gets to write its pid file, in ms. */
const HOLDER_READY_TIMEOUT_MS = 10_000;
/** How long one sshd gets from spawn to answering with an SSH banner, in ms. */
const SSHD_READY_TIMEOUT_MS = 10_000;
/** Pause between readiness probes, in ms. */
const READY_POLL_INTERVAL_MS = 50;
/** Timeout of one readiness probe (TCP connect + banner), in ms. */
const PROBE_TIMEOUT_MS = 1_000;
/** How long a process gets to exit after SIGTERM before SIGKILL, in ms. */
const KILL_GRACE_MS = 2_000;
/** How long to wait for a process to vanish after SIGKILL, in ms. */
const KILL_WAIT_MS = 2_000;
/** How long to wait for the kernel to remove a veth after its namespace is gone, in ms. */
const LINK_GONE_TIMEOUT_MS = 2_000;
/** Polling interval while waiting for processes or links to go away, in ms. */
const GONE_POLL_INTERVAL_MS = 20;
/** Timeout of one external command (ip, ssh-keygen), in ms. */
const COMMAND_TIMEOUT_MS = 15_000;
/** How much of sshd's log goes into an error message, in bytes. */
const LOG_TAIL_BYTES = 4_000;

const ID_PATTERN = /^[a-z0-9]{1,6}$/;
/** Host names: valid hostnames that server/machines/static-hosts.ts also accepts (≤31 chars, starts with a letter). */
const NAME_PATTERN = /^[a-z]([a-z0-9-]{0,29}[a-z0-9])?$/;

function namespaceName(id: string, name: string): string {
  return `ld-${id}-${name}`;
}

function linkName(id: string, index: number): string {
  return `ld${id}h${index}`;
}

/** 10.213.S.(4i+1): host side; 10.213.S.(4i+2): namespace side. */
function addresses(subnet: number, index: number): { hostSide: string; nsSide: string } {
  const base = index * ADDRESSES_PER_HOST;
  return { hostSide: `${ADDRESS_PREFIX}.${subnet}.${base + 1}`, nsSide: `${ADDRESS_PREFIX}.${subnet}.${base + 2}` };
}

function hostDir(dir: string, id: string, name: string): string {
  return path.join(dir, namespaceName(id, name));
}

function validateId(id: string): void {
  if (!ID_PATTERN.test(id)) throw new Error(`netns hosts: id must match ${ID_PATTERN} (got ${JSON.stringify(id)})`);
}

/** What createNetnsHosts is asked for. */
export interface NetnsHostsOptions {
  id: string;
  names: string[];
  subnet: number;
  dir: string;
  /**
   * Files bound over paths inside every host's private mount namespace before sshd starts (e.g. a
   * test's own /etc/environment): the host sees them, this machine does not. Targets must exist.
   */
  binds?: readonly { source: string; target: string }[];
  /** sshd with PAM (pam_env applies /etc/environment, as on a real machine); default off. */
  usePam?: boolean;
  /** Start the terminal holder on each host (default true). */
  holder?: boolean;
  /**
   * Host private keys (OpenSSH text) by host name, instead of generated ones: a stand-in for a VM
   * whose host key its provider chose (the fake Kubernetes API's hosts take it from cloud-init).
   */
  hostKeys?: Readonly<Record<string, string>>;
  /** More authorized_keys lines for root besides the set's own client key (a provider's key for its machines). */
  authorizedKeys?: string;
}

/**
 * Creates one sshd per name and waits until each answers with an SSH banner. Leftovers of an
 * earlier run with the same id (namespaces, links, sshd processes) are removed first. On failure
 * everything created so far is torn down and the error names the failing command or host.
 */
export async function createNetnsHosts(opts: NetnsHostsOptions): Promise<NetnsHostSet> {
  const { id, names, subnet } = opts;
  checkOptions(opts);
  const dir = path.resolve(opts.dir);
  await destroyNetnsHostsById(id, { dir });
  await assertSubnetFree(subnet);

  await fs.mkdir(dir, { recursive: true });
  await fs.mkdir(SSHD_PRIVSEP_DIR, { recursive: true, mode: 0o755 });
  const client = await makeClientKey(dir, id, opts.authorizedKeys ?? "");

  const started: StartedHost[] = [];
  const results = await Promise.allSettled(
    names.map(async (name, index) => {
      const host = await startHost({
        id,
        name,
        index,
        subnet,
        dir,
        ...client,
        binds: opts.binds ?? [],
        usePam: opts.usePam ?? false,
        holder: opts.holder ?? true,
        hostKey: opts.hostKeys?.[name],
      });
      started.push(host);
      return host;
    }),
  );
  const failures = results.filter((r): r is PromiseRejectedResult => r.status === "rejected");
  if (failures.length > 0) {
    try {
      await destroyNetnsHostsById(id, { dir });
    } catch (cleanupError) {
      log.warn({ err: cleanupError, id }, "netns hosts: cleanup after failed create failed");
    }
    const messages = failures.map((f) => (f.reason instanceof Error ? f.reason.message : String(f.reason)));
    throw new Error(`netns hosts: creating set ${id} failed:\n${messages.join("\n")}`);
  }
  return hostSet(
    id,
    dir,
    names.map((name) => started.find((h) => h.info.name === name)!),
  );
}

/** Refuses a bad id, subnet, name list or interface name, and a caller that is not root. */
function checkOptions(opts: NetnsHostsOptions): void {
  const { id, names, subnet } = opts;
  validateId(id);
  if (!Number.isInteger(subnet) || subnet < 0 || subnet > 255) {
    throw new Error(`netns hosts: subnet must be an integer 0..255 (got ${subnet})`);
  }
  if (names.length === 0 || names.length > MAX_HOSTS) {
    throw new Error(`netns hosts: need 1..${MAX_HOSTS} names (got ${names.length})`);
  }
  for (const name of names) {
    if (!NAME_PATTERN.test(name)) {
      throw new Error(`netns hosts: host name ${JSON.stringify(name)} must match ${NAME_PATTERN} (a lowercase hostname, ≤31 chars)`);
    }
  }
  if (new Set(names).size !== names.length) throw new Error(`netns hosts: duplicate host names in ${names.join(", ")}`);
  if (linkName(id, names.length - 1).length > MAX_IFNAME_LENGTH) {
    throw new Error(`netns hosts: interface name ${linkName(id, names.length - 1)} exceeds ${MAX_IFNAME_LENGTH} characters`);
  }
  if (process.getuid?.() !== 0) throw new Error("netns hosts: must run as root (network namespaces, sshd)");
}

/** One client keypair for the whole set, and the authorized_keys file every host's sshd reads. */
async function makeClientKey(
  dir: string,
  id: string,
  moreAuthorizedKeys: string,
): Promise<{ privateKeyPath: string; privateKey: string; authorizedKeysPath: string }> {
  const privateKeyPath = path.join(dir, "id_ed25519");
  await generateKey(privateKeyPath, `labdeck-netns-${id}`);
  const privateKey = await fs.readFile(privateKeyPath, "utf8");
  const authorizedKeysPath = path.join(dir, "authorized_keys");
  await fs.writeFile(authorizedKeysPath, (await fs.readFile(privateKeyPath + ".pub", "utf8")) + moreAuthorizedKeys, {
    mode: 0o600,
  });
  return { privateKeyPath, privateKey, authorizedKeysPath };
}

/** The set as callers hold it: its hosts in the order asked, an sshd restart per host, one shared teardown. */
function hostSet(id: string, dir: string, ordered: StartedHost[]): NetnsHostSet {
  let destroying: Promise<void> | undefined;
  return {
    id,
    dir,
    hosts: ordered.map((h) => h.info),
    async restartSshd(name, options = {}) {
      const host = ordered.find((h) => h.info.name === name);
      if (!host) throw new Error(`netns hosts: no host ${name} in set ${id}`);
      await restartHostSshd(host, options.killSessions ?? false);
    },
    destroy() {
      // Concurrent and repeated calls share one teardown; after a failure the next call retries.
      destroying ??= teardown({
        namespaces: ordered.map((h) => h.info.namespace),
        links: ordered.map((_, index) => linkName(id, index)),
        sshds: ordered.map((h) => ({ pid: h.info.pid, configPath: h.configPath, child: h.child })),
      }).catch((err: unknown) => {
        destroying = undefined;
        throw err;
      });
      return destroying;
    },
  };
}

/**
 * Removes everything a run with this id may have left: processes inside namespaces `ld-<id>-*`,
 * sshd listeners started with a config under a `ld-<id>-*` directory (found via pid files in
 * `opts.dir` if given, and by scanning /proc), the namespaces, and host-side links `ld<id>h<n>`.
 */
export async function destroyNetnsHostsById(id: string, opts: { dir?: string } = {}): Promise<void> {
  validateId(id);
  const namespaces = (await listNamespaces()).filter((ns) => ns.startsWith(`ld-${id}-`));
  const linkPattern = new RegExp(`^ld${id}h\\d+$`);
  const links = (await listLinks()).filter((l) => linkPattern.test(l));
  const configPattern = new RegExp(`/ld-${id}-[a-z0-9-]+/sshd_config$`);
  const sshds: SshdRef[] = [];

  if (opts.dir) {
    const dir = path.resolve(opts.dir);
    let entries: string[] = [];
    try {
      entries = await fs.readdir(dir);
    } catch {
      // No dir, no pid files.
    }
    for (const entry of entries.filter((e) => e.startsWith(`ld-${id}-`))) {
      const pidText = await fs.readFile(path.join(dir, entry, "sshd.pid"), "utf8").catch(() => "");
      const pid = Number.parseInt(pidText.trim(), 10);
      if (Number.isInteger(pid) && pid > 0) sshds.push({ pid, configPath: path.join(dir, entry, "sshd_config") });
    }
  }
  // Holders of the set (started with --pid-file <dir>/ld-<id>-<name>/holder.pid) outlive a
  // namespace whose name is already gone, as sshd does.
  const holderPattern = new RegExp(` --pid-file \\S*/ld-${id}-[a-z0-9-]+/holder\\.pid$`);
  const holders: number[] = [];
  for (const proc of await listProcesses()) {
    const configPath = sshdConfigOf(proc.commandLine);
    if (configPath && configPattern.test(configPath)) sshds.push({ pid: proc.pid, configPath });
    if (proc.commandLine.includes("labdeck-holder") && holderPattern.test(proc.commandLine)) holders.push(proc.pid);
  }
  await killAll(holders);
  await teardown({ namespaces, links, sshds });
}

/** Writes the JSON file server/machines/static-hosts.ts reads (atomically: temp file + rename). */
export async function writeStaticHostsFile(set: NetnsHostSet, file: string, allocation: "shared" | "exclusive"): Promise<void> {
  const content = {
    // These hosts share this machine's filesystem and processes: see StaticHostsFile.demo.
    demo: true,
    allocation,
    groups: [
      {
        id: set.id,
        machines: set.hosts.map((h) => ({
          name: h.name,
          host: h.host,
          port: h.port,
          user: h.user,
          privateKeyPath: h.privateKeyPath,
          hostKey: h.hostKey,
        })),
      },
    ],
  };
  const target = path.resolve(file);
  await fs.mkdir(path.dirname(target), { recursive: true });
  const temp = `${target}.${process.pid}.tmp`;
  await fs.writeFile(temp, JSON.stringify(content, null, 2) + "\n", { mode: 0o644 });
  await fs.rename(temp, target);
}

// ---------------------------------------------------------------------------------------------
// Starting one host

interface StartedHost {
  info: NetnsHost;
  configPath: string;
  child: ChildProcess;
}

interface HostSpec {
  id: string;
  name: string;
  index: number;
  subnet: number;
  dir: string;
  privateKeyPath: string;
  privateKey: string;
  authorizedKeysPath: string;
  binds: readonly { source: string; target: string }[];
  usePam: boolean;
  holder: boolean;
  /** Host private key text to use; none: a fresh one. */
  hostKey?: string;
}

/** A host's files: its directory, host key, sshd config, pid and log files. */
interface HostFiles {
  work: string;
  configPath: string;
  pidPath: string;
  logPath: string;
  holderPidPath: string;
}

async function startHost(p: HostSpec): Promise<StartedHost> {
  const ns = namespaceName(p.id, p.name);
  const link = linkName(p.id, p.index);
  const { hostSide, nsSide } = addresses(p.subnet, p.index);
  const work = hostDir(p.dir, p.id, p.name);
  await fs.mkdir(work, { recursive: true });
  const hostKeyPath = path.join(work, "ssh_host_ed25519_key");
  const hostKey = await writeHostKey(hostKeyPath, p);
  const files: HostFiles = {
    work,
    configPath: path.join(work, "sshd_config"),
    pidPath: path.join(work, "sshd.pid"),
    logPath: path.join(work, "sshd.log"),
    holderPidPath: path.join(work, "holder.pid"),
  };
  await fs.rm(files.pidPath, { force: true });
  await fs.rm(files.holderPidPath, { force: true });
  await writeSshdConfig(files, ns, nsSide, hostKeyPath, p);
  // Fail early with sshd's own words if the config is wrong.
  await run(SSHD, ["-t", "-f", files.configPath]);

  // Network: namespace, veth pair with the peer created directly inside it as eth0.
  await run("ip", ["netns", "add", ns]);
  await run("ip", ["-n", ns, "link", "set", "lo", "up"]);
  await run("ip", ["link", "add", link, "type", "veth", "peer", "name", "eth0", "netns", ns]);
  await run("ip", ["addr", "add", `${hostSide}/30`, "dev", link]);
  await run("ip", ["link", "set", link, "up"]);
  await run("ip", ["-n", ns, "addr", "add", `${nsSide}/30`, "dev", "eth0"]);
  await run("ip", ["-n", ns, "link", "set", "eth0", "up"]);

  const child = spawnSshd(ns, files, p);
  const exited = new Promise<string>((resolve) => {
    child.once("error", (err) => resolve(`spawn failed: ${err.message}`));
    child.once("exit", (code, signal) => resolve(`exited with ${signal ?? `code ${code}`}`));
  });
  child.unref();
  const pid = child.pid;
  const describe = `sshd for ${p.name} (namespace ${ns}, ${nsSide}:${SSH_PORT}, config ${files.configPath})`;
  if (pid === undefined) throw new Error(`${describe}: ${await exited}`);

  const outcome = await Promise.race([
    waitForBanner(nsSide, SSH_PORT, SSHD_READY_TIMEOUT_MS).then(() => "ready" as const),
    exited.then((reason) => ({ reason })),
  ]);
  if (outcome !== "ready") {
    throw new Error(`${describe} ${outcome.reason} before answering; sshd log:\n${await logTail(files.logPath)}`);
  }
  const keeperPid = p.holder ? await waitForPidFile(files.holderPidPath, path.join(work, "holder.log")) : undefined;
  const holderPid = keeperPid ? await holderDaemonPid(keeperPid) : undefined;
  return {
    info: {
      name: p.name,
      host: nsSide,
      port: SSH_PORT,
      user: "root",
      privateKeyPath: p.privateKeyPath,
      privateKey: p.privateKey,
      hostKey,
      namespace: ns,
      pid,
      holderPid,
      keeperPid,
    },
    configPath: files.configPath,
    child,
  };
}

/** The host's key pair at `hostKeyPath` (the one given, or a fresh one); returns the public key line without comment. */
async function writeHostKey(hostKeyPath: string, p: Pick<HostSpec, "name" | "hostKey">): Promise<string> {
  if (p.hostKey) {
    await fs.rm(hostKeyPath, { force: true }); // sshd refuses a key file others can read: made anew with 0600
    await fs.writeFile(hostKeyPath, p.hostKey.endsWith("\n") ? p.hostKey : `${p.hostKey}\n`, { mode: 0o600 });
    await fs.writeFile(hostKeyPath + ".pub", await run("ssh-keygen", ["-y", "-f", hostKeyPath]), { mode: 0o644 });
  } else await generateKey(hostKeyPath, p.name);
  return (await fs.readFile(hostKeyPath + ".pub", "utf8")).trim().split(/\s+/).slice(0, 2).join(" ");
}

async function writeSshdConfig(files: HostFiles, ns: string, nsSide: string, hostKeyPath: string, p: HostSpec): Promise<void> {
  await fs.writeFile(
    files.configPath,
    [
      `# Generated by server/testing/netns-hosts.ts for namespace ${ns}`,
      `ListenAddress ${nsSide}`,
      `Port ${SSH_PORT}`,
      `HostKey ${hostKeyPath}`,
      `AuthorizedKeysFile ${p.authorizedKeysPath}`,
      "PermitRootLogin prohibit-password",
      "PasswordAuthentication no",
      "KbdInteractiveAuthentication no",
      `UsePAM ${p.usePam ? "yes" : "no"}`,
      "StrictModes no",
      `PidFile ${files.pidPath}`,
      "PrintMotd no",
      "PrintLastLog no",
      "SetEnv LANG=C.UTF-8",
      "MaxSessions 100",
      "MaxStartups 200:30:400",
      "ClientAliveInterval 0",
      "",
    ].join("\n"),
    { mode: 0o600 },
  );
}

/**
 * sshd in the namespace and a fresh UTS namespace. `ip netns exec`, `unshare` (no --fork) and
 * `exec` all replace the process, so the spawned pid is sshd's pid. Output goes to a file so sshd
 * survives this process exiting (CLI `up`).
 */
function spawnSshd(ns: string, files: HostFiles, p: HostSpec): ChildProcess {
  const logFd = openSync(files.logPath, "w", 0o600);
  try {
    return spawn(
      "ip",
      [
        "netns",
        "exec",
        ns,
        "unshare",
        "--uts",
        "--mount",
        "--propagation",
        "private",
        "sh",
        "-c",
        // A private /root per host (tmpfs, seeded from /etc/skel): what a learner or a check
        // writes in one host's home is not seen by the others, nor by this machine's /root.
        // Then the caller's bind mounts (source/target pairs after the first seven arguments). The
        // terminal holder gets private tmpfs for its socket and log directories (the paths every
        // machine uses) and starts with setsid -f: a new session, not a child of sshd.
        "n=$1 d=$2 c=$3 hf=$4 py=$5 pf=$6 lg=$7 && shift 7 && " +
          'mount -t tmpfs -o mode=700 labdeck-home /root && cp -a /etc/skel/. /root/ && hostname "$n" && ' +
          'while [ $# -gt 0 ]; do mount --bind "$1" "$2" || exit 1; shift 2; done && ' +
          "for h in " +
          `${HOLDER_RUN_DIR} ${HOLDER_STATE_DIR}` +
          '; do mkdir -p "$h" && mount -t tmpfs -o mode=700 labdeck-holder "$h"; done && ' +
          'if [ -n "$hf" ]; then setsid -f "$py" "$hf" --pid-file "$pf" </dev/null >>"$lg" 2>&1; fi && exec "$d" -D -e -f "$c"',
        "sh",
        p.name,
        SSHD,
        files.configPath,
        p.holder ? holderFile() : "",
        HOLDER_PYTHON,
        files.holderPidPath,
        path.join(files.work, "holder.log"),
        ...p.binds.flatMap((b) => [b.source, b.target]),
      ],
      { detached: true, stdio: ["ignore", logFd, logFd] },
    );
  } finally {
    closeSync(logFd);
  }
}

/**
 * The pid of the holder daemon a keeper runs (its child running labdeck-holder; the keeper's other
 * children are shells of a daemon that died), waiting while the keeper starts a new one.
 */
export async function holderDaemonPid(keeperPid: number): Promise<number> {
  const deadline = Date.now() + HOLDER_READY_TIMEOUT_MS;
  while (Date.now() < deadline) {
    const children = await fs.readFile(`/proc/${keeperPid}/task/${keeperPid}/children`, "utf8").catch(() => "");
    for (const pid of children.split(" ").filter(Boolean).map(Number)) {
      if ((await processCommandLine(pid))?.includes("labdeck-holder")) return pid;
    }
    await sleep(READY_POLL_INTERVAL_MS);
  }
  throw new Error(`the holder keeper ${keeperPid} runs no daemon after ${HOLDER_READY_TIMEOUT_MS} ms`);
}

/** The keeper's pid, once it has written its pid file (its daemon has bound the socket). */
async function waitForPidFile(file: string, logFile: string): Promise<number> {
  const deadline = Date.now() + HOLDER_READY_TIMEOUT_MS;
  while (Date.now() < deadline) {
    const pid = Number.parseInt((await fs.readFile(file, "utf8").catch(() => "")).trim(), 10);
    if (Number.isInteger(pid) && pid > 0) return pid;
    await sleep(READY_POLL_INTERVAL_MS);
  }
  throw new Error(`terminal holder did not start within ${HOLDER_READY_TIMEOUT_MS} ms; its log:\n${await logTail(logFile)}`);
}

/** Kills the listener (and the per-login sshds) and starts sshd again inside the holder's namespaces. */
async function restartHostSshd(host: StartedHost, killSessions: boolean): Promise<void> {
  const { info, configPath } = host;
  if (!info.holderPid) throw new Error(`netns hosts: ${info.name} has no holder whose namespaces to enter`);
  const victims = [info.pid];
  if (killSessions) {
    for (const pid of await namespacePids(info.namespace)) {
      const commandLine = await processCommandLine(pid);
      // Per-connection sshds retitle themselves "sshd: root@pts/0", "sshd: root@notty", "sshd: root [priv]".
      if (commandLine && /^sshd: \S+(@| \[)/.test(commandLine)) victims.push(pid);
    }
  }
  await killAll(victims);
  const logPath = path.join(path.dirname(configPath), "sshd.log");
  const logFd = openSync(logPath, "a", 0o600);
  let child: ChildProcess;
  try {
    child = spawn("nsenter", ["--target", String(info.holderPid), "--net", "--mount", "--uts", SSHD, "-D", "-e", "-f", configPath], {
      detached: true,
      stdio: ["ignore", logFd, logFd],
    });
  } finally {
    closeSync(logFd);
  }
  child.unref();
  // nsenter without --fork execs sshd: the spawned pid is sshd's.
  info.pid = child.pid!;
  host.child = child;
  await waitForBanner(info.host, info.port, SSHD_READY_TIMEOUT_MS);
}

/** Two sets on one subnet would get duplicate addresses and routes; refuse instead. */
async function assertSubnetFree(subnet: number): Promise<void> {
  const prefix = `${ADDRESS_PREFIX}.${subnet}.`;
  // Lines look like "5: lddevh0    inet 10.213.10.1/30 scope global lddevh0 ...".
  const users = (await run("ip", ["-o", "-4", "addr", "show"]))
    .split("\n")
    .map((l) => /^\d+:\s+(\S+)\s+inet\s+(\S+)/.exec(l))
    .filter((m): m is RegExpExecArray => m !== null && m[2]!.startsWith(prefix))
    .map((m) => `${m[1]} (${m[2]})`);
  if (users.length > 0) {
    throw new Error(`netns hosts: subnet ${prefix}0/24 is already in use by ${users.join(", ")} (another host set?)`);
  }
}

/** Writes a fresh passphrase-less ed25519 keypair (replacing any old one at that path). */
async function generateKey(file: string, comment: string): Promise<void> {
  await fs.rm(file, { force: true });
  await fs.rm(file + ".pub", { force: true });
  await run("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-C", comment, "-f", file]);
}

/** Retries TCP connect + reading an "SSH-" banner line until it works or `timeoutMs` passes. */
async function waitForBanner(host: string, port: number, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let lastError = "no attempt";
  while (Date.now() < deadline) {
    try {
      await probeBanner(host, port);
      return;
    } catch (err) {
      lastError = err instanceof Error ? err.message : String(err);
    }
    await sleep(READY_POLL_INTERVAL_MS);
  }
  throw new Error(`no SSH banner from ${host}:${port} within ${timeoutMs} ms (last error: ${lastError})`);
}

function probeBanner(host: string, port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host, port });
    let received = "";
    const finish = (err?: Error) => {
      socket.destroy();
      if (err) reject(err);
      else resolve();
    };
    socket.setTimeout(PROBE_TIMEOUT_MS, () => finish(new Error(`timed out after ${PROBE_TIMEOUT_MS} ms`)));
    socket.on("error", (err) => finish(err));
    socket.on("data", (chunk) => {
      received += chunk.toString("latin1");
      const newline = received.indexOf("\n");
      if (newline < 0) return;
      const line = received.slice(0, newline);
      if (line.startsWith("SSH-")) finish();
      else finish(new Error(`unexpected banner ${JSON.stringify(line)}`));
    });
    socket.on("end", () => finish(new Error("connection closed before banner")));
  });
}

async function logTail(file: string): Promise<string> {
  try {
    const text = await fs.readFile(file, "utf8");
    return text.length > LOG_TAIL_BYTES ? "…" + text.slice(-LOG_TAIL_BYTES) : text || "(empty)";
  } catch (err) {
    return `(cannot read ${file}: ${(err as Error).message})`;
  }
}

// ---------------------------------------------------------------------------------------------
// Tearing down

interface SshdRef {
  pid: number;
  /** Config the sshd was started with; a pid is only killed if its command line still names it. */
  configPath: string;
  /** Set when this process spawned it: lets us wait until it is reaped, not just signalled. */
  child?: ChildProcess;
}

/**
 * Kills every process inside the namespaces plus the listed sshds (if still ours), then deletes
 * the namespaces and host-side links. Missing pieces are skipped, so calling it twice is harmless.
 */
async function teardown(what: { namespaces: string[]; links: string[]; sshds: SshdRef[] }): Promise<void> {
  const existing = new Set(await listNamespaces());
  const namespaces = what.namespaces.filter((ns) => existing.has(ns));
  const pids = new Set<number>();
  for (const ns of namespaces) {
    for (const pid of await namespacePids(ns)) pids.add(pid);
  }
  for (const sshd of what.sshds) {
    const commandLine = await processCommandLine(sshd.pid);
    if (commandLine && sshdConfigOf(commandLine) === sshd.configPath) pids.add(sshd.pid);
  }
  if (pids.size > 0) log.debug({ pids: [...pids] }, "netns hosts: killing processes");
  await killAll([...pids]);
  // Children we spawned: wait until Node has reaped them so the pid is really gone.
  await Promise.all(what.sshds.map((s) => (s.child ? waitForChildExit(s.child) : undefined)));

  for (const ns of namespaces) await run("ip", ["netns", "del", ns]);
  for (const link of what.links) {
    try {
      await run("ip", ["link", "del", link]);
    } catch (err) {
      // Deleting the namespace usually takes the veth pair with it; that race is fine.
      if (!(await listLinks()).includes(link)) continue;
      throw err;
    }
  }
  const deadline = Date.now() + LINK_GONE_TIMEOUT_MS;
  for (;;) {
    const remaining = (await listLinks()).filter((l) => what.links.includes(l));
    if (remaining.length === 0) break;
    if (Date.now() > deadline) throw new Error(`netns hosts: links ${remaining.join(", ")} still present after teardown`);
    await sleep(GONE_POLL_INTERVAL_MS);
  }
}

async function killAll(pids: number[]): Promise<void> {
  if (pids.length === 0) return;
  for (const pid of pids) signal(pid, "SIGTERM");
  if (await waitGone(pids, KILL_GRACE_MS)) return;
  for (const pid of pids) signal(pid, "SIGKILL");
  if (!(await waitGone(pids, KILL_WAIT_MS))) {
    const alive = [];
    for (const pid of pids) if (await isAlive(pid)) alive.push(pid);
    throw new Error(`netns hosts: processes ${alive.join(", ")} survived SIGKILL`);
  }
}

function signal(pid: number, sig: NodeJS.Signals): void {
  try {
    process.kill(pid, sig);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "ESRCH") throw err;
  }
}

async function waitGone(pids: number[], timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    let anyAlive = false;
    for (const pid of pids) if (await isAlive(pid)) anyAlive = true;
    if (!anyAlive) return true;
    if (Date.now() > deadline) return false;
    await sleep(GONE_POLL_INTERVAL_MS);
  }
}

/** Alive = exists and is not a zombie (a zombie has exited; only its parent can reap it). */
async function isAlive(pid: number): Promise<boolean> {
  try {
    const stat = await fs.readFile(`/proc/${pid}/stat`, "utf8");
    const state = stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3);
    return state !== "Z" && state !== "X";
  } catch {
    return false;
  }
}

function waitForChildExit(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, KILL_WAIT_MS);
    child.once("exit", () => {
      clearTimeout(timer);
      resolve();
    });
  });
}

// ---------------------------------------------------------------------------------------------
// System queries and command runner

async function listNamespaces(): Promise<string[]> {
  const out = await run("ip", ["netns", "list"]);
  // Lines look like "ld-t-node01 (id: 3)" or just "ld-t-node01".
  return out
    .split("\n")
    .map((l) => l.trim().split(/\s+/)[0])
    .filter((n): n is string => Boolean(n));
}

async function namespacePids(ns: string): Promise<number[]> {
  const out = await run("ip", ["netns", "pids", ns]);
  return out
    .split(/\s+/)
    .filter(Boolean)
    .map((s) => Number.parseInt(s, 10))
    .filter((n) => Number.isInteger(n) && n > 0);
}

async function listLinks(): Promise<string[]> {
  const out = await run("ip", ["-o", "link", "show"]);
  // Lines look like "12: ldth0@if11: <BROADCAST,...". The "@ifN" suffix names the peer.
  return out
    .split("\n")
    .map((l) => /^\d+:\s+([^:@\s]+)/.exec(l)?.[1])
    .filter((n): n is string => Boolean(n));
}

/**
 * A process's command line as one space-separated string. Not argv: sshd rewrites its own
 * (setproctitle), so the listener shows up as one string
 * "sshd: /usr/sbin/sshd -D -e -f <config> [listener] 0 of 200-400 startups".
 */
async function processCommandLine(pid: number): Promise<string | undefined> {
  try {
    const raw = await fs.readFile(`/proc/${pid}/cmdline`, "utf8");
    return raw.replace(/\0+$/, "").replaceAll("\0", " ");
  } catch {
    return undefined;
  }
}

/**
 * The config path of an sshd started by this module, from its command line (plain or retitled by
 * sshd itself), or undefined for any other process. Assumes the config path has no spaces.
 */
function sshdConfigOf(commandLine: string): string | undefined {
  const match = SSHD_COMMAND_LINE.exec(commandLine);
  return match?.[1];
}

async function listProcesses(): Promise<{ pid: number; commandLine: string }[]> {
  const entries = await fs.readdir("/proc");
  const result: { pid: number; commandLine: string }[] = [];
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue;
    const pid = Number(entry);
    const commandLine = await processCommandLine(pid);
    if (commandLine) result.push({ pid, commandLine });
  }
  return result;
}

/** Runs a command, resolving with stdout; the error names the full command, exit status and stderr. */
function run(cmd: string, args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(cmd, args, { timeout: COMMAND_TIMEOUT_MS, encoding: "utf8" }, (err, stdout, stderr) => {
      if (!err) return resolve(stdout);
      const status = err.killed ? `killed (timeout ${COMMAND_TIMEOUT_MS} ms?)` : `exit ${err.code ?? "?"}`;
      const detail = (stderr || stdout || err.message).trim();
      reject(new Error(`command failed: ${[cmd, ...args].join(" ")} (${status}): ${detail}`));
    });
  });
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
