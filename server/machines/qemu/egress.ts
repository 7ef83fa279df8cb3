/**
 * Outbound access for the VMs of a lab that asks for it (lab.yaml `network.internet`), without
 * the host and private ranges (ARCHITECTURE.md: Lab machine network). Such a machine set's QEMU
 * processes (machine-set.ts) run in a network namespace made for the set, where eth0 is
 * unrestricted slirp:
 *
 *   VM eth0 (10.0.2.15) -> slirp inside QEMU -> sockets in netns ldq-<tag>-<setId>
 *     -> eth0 of the namespace (10.253.a.b+2/30) == veth == ldqe<n> on the host (10.253.a.b+1/30)
 *     -> host routing, forwarded and masqueraded behind the host's own address
 *
 * On the host one nftables table of Labdeck's own, `inet labdeck`, matches the veths by name
 * (`ldqe*`), so no rule names a set: new connections from them to the host itself are
 * dropped (input), forwarding to loopback, RFC 1918, 100.64/10, 169.254/16, multicast/reserved
 * and the host's own addresses is dropped, IPv6 from them is dropped (the namespace has IPv6
 * disabled and no v6 route anyway), nothing is forwarded into them that they did not start, and
 * what leaves is masqueraded. One exception: the host's own resolvers (its /etc/resolv.conf
 * nameservers, which slirp's DNS at 10.0.2.3 relays to) on port 53.
 * The platform's SSH reaches the VMs at the namespace's address (slirp's `hostfwd` is bound
 * there); those connections are the host's own output, and their replies come back as
 * established traffic.
 *
 * IPv4 forwarding: the host must forward between the veths and its uplink (per interface, both
 * ways), so `net.ipv4.ip_forward` is set to 1 when the first internet set starts (logged) and
 * left on; the table's forward rules keep the namespaces' traffic to what is allowed above.
 * IPv6 forwarding is never touched.
 */
import { createHash } from "node:crypto";
import fs from "node:fs/promises";
import path from "node:path";
import type { Logger } from "pino";
import { z } from "zod";
import { requireTools, run, type HostTool } from "./command";

/** Host-side veth names: the prefix the nftables rules match (interface names are at most 15 characters). */
export const EGRESS_LINK_PREFIX = "ldqe";
/** The namespaces' veth links: /30s in 10.253.0.0/16 (host .1, namespace .2); 16384 sets at once. */
const LINK_NETWORK = "10.253.0.0/16";
const LINK_OCTETS = [10, 253] as const;
const MAX_LINKS = 16_384;
/** Where `ip netns` keeps named namespaces. */
const NETNS_DIR = "/run/netns";
/** Labdeck's own nftables table; nothing else is ever touched. */
export const NFT_TABLE = "labdeck";
/**
 * Destinations the namespaces may never be forwarded to: "this network", RFC 1918, shared address
 * space (carrier-grade NAT), loopback, link-local (a cloud's metadata service), multicast and the
 * reserved range up to broadcast. The host's own addresses are matched separately (fib type local).
 */
export const BLOCKED_V4 = [
  "0.0.0.0/8",
  "10.0.0.0/8",
  "100.64.0.0/10",
  "127.0.0.0/8",
  "169.254.0.0/16",
  "172.16.0.0/12",
  "192.168.0.0/16",
  "224.0.0.0/3",
] as const;
/** How long a "can egress be set up here" answer is reused, ms (the tools and the kernel do not change often). */
const AVAILABILITY_CACHE_MS = 60_000;

export const EgressRecord = z.object({
  /** The set's network namespace (`ip netns` name). */
  netns: z.string(),
  /** Host side of the veth pair. */
  hostLink: z.string(),
  /** Host side's address (the namespace's default gateway). */
  hostAddress: z.string(),
  /** The namespace's address: slirp's `hostfwd` listens here; the platform's SSH endpoint host. */
  nsAddress: z.string(),
});
export type EgressRecord = z.infer<typeof EgressRecord>;

/** A short tag of the data directory: namespaces of two data directories on one host never mix. */
function dataDirTag(dataDir: string): string {
  return createHash("sha256").update(path.resolve(dataDir)).digest("hex").slice(0, 8);
}

function namespacePrefix(dataDir: string): string {
  return `ldq-${dataDirTag(dataDir)}-`;
}

/** The namespace of a set (named after it, so cleanup after a crash finds it without state). */
export function egressNamespace(dataDir: string, setId: string): string {
  return namespacePrefix(dataDir) + setId;
}

/** Absolute path of a host tool (the server's PATH may lack the sbin directories). */
async function tool(name: HostTool): Promise<string> {
  return (await requireTools([name]))[name];
}

/** The argv prefix that runs a command in the namespace (only the network namespace changes). */
export async function inNamespace(netns: string): Promise<string[]> {
  return [await tool("nsenter"), `--net=${path.join(NETNS_DIR, netns)}`, "--"];
}

let availability: { at: number; answer: Promise<string | null> } | undefined;

/** Null when internet sets can be set up on this host, else why not (for operators). */
export function egressUnavailable(): Promise<string | null> {
  if (availability && Date.now() - availability.at < AVAILABILITY_CACHE_MS) return availability.answer;
  const answer = (async () => {
    if (process.getuid?.() !== 0) return "the server does not run as root (network namespaces and nftables need it)";
    try {
      await requireTools(["ip", "nft", "nsenter"]);
    } catch (error) {
      return (error as Error).message;
    }
    try {
      await run(await tool("nft"), ["list", "tables"]);
    } catch (error) {
      return `nftables does not work here: ${(error as Error).message.split("\n").slice(-1)[0]}`;
    }
    // Someone else's network in 10.253.0.0/16 would be shadowed by the veths.
    const routes = await run(await tool("ip"), ["-4", "-o", "route", "show", "root", LINK_NETWORK]);
    const foreign = routes.split("\n").filter((line) => line.trim() && !line.includes(`dev ${EGRESS_LINK_PREFIX}`));
    if (foreign.length)
      return `the host already routes part of ${LINK_NETWORK} (${foreign[0]!.trim()}), which the session namespaces' links use`;
    return null;
  })();
  availability = { at: Date.now(), answer };
  return answer;
}

/** The host's non-loopback IPv4 resolvers (what slirp's DNS at 10.0.2.3 relays to). */
async function hostResolvers(): Promise<string[]> {
  const text = await fs.readFile("/etc/resolv.conf", "utf8").catch(() => "");
  const servers = [...text.matchAll(/^\s*nameserver\s+(\d+\.\d+\.\d+\.\d+)\s*$/gm)].map((m) => m[1]!);
  return [...new Set(servers.filter((s) => !s.startsWith("127.")))];
}

/** The table's whole content; applied in one transaction, so re-applying is idempotent and atomic. */
export function nftScript(resolvers: readonly string[]): string {
  const t = `inet ${NFT_TABLE}`;
  const ns = `"${EGRESS_LINK_PREFIX}*"`;
  return [
    `add table ${t}`,
    `add set ${t} blocked { type ipv4_addr; flags interval; }`,
    `add set ${t} resolvers { type ipv4_addr; }`,
    `add chain ${t} input { type filter hook input priority filter; policy accept; }`,
    `add chain ${t} forward { type filter hook forward priority filter; policy accept; }`,
    `add chain ${t} postrouting { type nat hook postrouting priority srcnat; policy accept; }`,
    `flush chain ${t} input`,
    `flush chain ${t} forward`,
    `flush chain ${t} postrouting`,
    `flush set ${t} blocked`,
    `flush set ${t} resolvers`,
    `add element ${t} blocked { ${BLOCKED_V4.join(", ")} }`,
    ...(resolvers.length ? [`add element ${t} resolvers { ${resolvers.join(", ")} }`] : []),
    // The host itself: only replies to what the host started (the platform's SSH to the VMs).
    `add rule ${t} input iifname ${ns} ct state established,related accept`,
    `add rule ${t} input iifname ${ns} counter drop`,
    `add rule ${t} forward iifname ${ns} meta nfproto ipv6 counter drop`,
    `add rule ${t} forward iifname ${ns} ip daddr @resolvers udp dport 53 accept`,
    `add rule ${t} forward iifname ${ns} ip daddr @resolvers tcp dport 53 accept`,
    `add rule ${t} forward iifname ${ns} ip daddr @blocked counter drop`,
    `add rule ${t} forward iifname ${ns} fib daddr type local counter drop`,
    // Into a namespace: only replies (no one outside opens connections to a set's namespace).
    `add rule ${t} forward oifname ${ns} ct state established,related accept`,
    `add rule ${t} forward oifname ${ns} counter drop`,
    `add rule ${t} postrouting ip saddr ${LINK_NETWORK} oifname != ${ns} masquerade`,
    "",
  ].join("\n");
}

/** Creates or refreshes the `inet labdeck` table. */
export async function ensureEgressTable(log?: Logger): Promise<void> {
  const resolvers = await hostResolvers();
  const script = nftScript(resolvers);
  const file = path.join("/run", `labdeck-nft-${process.pid}-${Date.now()}.nft`);
  await fs.writeFile(file, script, { mode: 0o600 });
  try {
    await run(await tool("nft"), ["-f", file]);
  } finally {
    await fs.rm(file, { force: true });
  }
  if (resolvers.length === 0)
    log?.warn("egress: the host has no non-loopback IPv4 nameserver in /etc/resolv.conf; internet sessions' VMs get no DNS");
}

/** IPv4 forwarding on (see the file comment); logs when this call turned it on. */
async function ensureForwarding(log: Logger): Promise<void> {
  const file = "/proc/sys/net/ipv4/ip_forward";
  if ((await fs.readFile(file, "utf8")).trim() === "1") return;
  await fs.writeFile(file, "1\n");
  log.warn(
    "egress: set net.ipv4.ip_forward=1 for internet sessions (left on; the inet labdeck nftables table limits what the session namespaces may reach)",
  );
}

async function linkNames(): Promise<string[]> {
  const out = await run(await tool("ip"), ["-o", "link", "show"]);
  return [...out.matchAll(/^\d+:\s+([^:@\s]+)/gm)].map((m) => m[1]!);
}

function linkAddresses(index: number): { host: string; ns: string } {
  const base = index * 4;
  const prefix = `${LINK_OCTETS[0]}.${LINK_OCTETS[1]}.${base >> 8}`;
  return { host: `${prefix}.${(base & 255) + 1}`, ns: `${prefix}.${(base & 255) + 2}` };
}

async function namespaceExists(netns: string): Promise<boolean> {
  return Boolean(await fs.stat(path.join(NETNS_DIR, netns)).catch(() => null));
}

/** Whether a set's namespace and its veth are both still there (a host reboot removes both). */
export async function egressIntact(record: EgressRecord): Promise<boolean> {
  return (await namespaceExists(record.netns)) && (await linkNames()).includes(record.hostLink);
}

/**
 * Makes a set's namespace, veth, addresses and routes, turns forwarding on and applies the
 * table. Leftovers of the same namespace name (a crash) are removed first. On failure nothing
 * it made is left.
 */
export async function setUpEgress(dataDir: string, setId: string, log: Logger): Promise<EgressRecord> {
  const netns = egressNamespace(dataDir, setId);
  await tearDownEgress(netns);
  await run(await tool("ip"), ["netns", "add", netns]);
  try {
    // The host side's name is the allocation: `ip link add` of a taken name fails, atomically.
    const taken = new Set(await linkNames());
    let index = -1;
    for (let i = 0; i < MAX_LINKS && index < 0; i++) {
      const name = `${EGRESS_LINK_PREFIX}${i}`;
      if (taken.has(name)) continue;
      try {
        await run(await tool("ip"), ["link", "add", name, "type", "veth", "peer", "name", "eth0", "netns", netns]);
        index = i;
      } catch (error) {
        if (!/File exists/.test((error as Error).message)) throw error;
      }
    }
    if (index < 0) throw new Error(`egress: all ${MAX_LINKS} session links are taken`);
    const hostLink = `${EGRESS_LINK_PREFIX}${index}`;
    const { host, ns } = linkAddresses(index);
    const inside = await inNamespace(netns);
    await fs.writeFile(`/proc/sys/net/ipv6/conf/${hostLink}/disable_ipv6`, "1\n").catch(() => undefined);
    await run(await tool("ip"), ["addr", "add", `${host}/30`, "dev", hostLink]);
    await run(await tool("ip"), ["link", "set", hostLink, "up"]);
    // IPv6 off inside: no address, no route, nothing to leave by.
    await run(inside[0]!, [
      ...inside.slice(1),
      "sh",
      "-c",
      "echo 1 > /proc/sys/net/ipv6/conf/all/disable_ipv6; echo 1 > /proc/sys/net/ipv6/conf/default/disable_ipv6",
    ]);
    await run(await tool("ip"), ["-n", netns, "link", "set", "lo", "up"]);
    await run(await tool("ip"), ["-n", netns, "addr", "add", `${ns}/30`, "dev", "eth0"]);
    await run(await tool("ip"), ["-n", netns, "link", "set", "eth0", "up"]);
    await run(await tool("ip"), ["-n", netns, "route", "add", "default", "via", host]);
    await ensureForwarding(log);
    await ensureEgressTable(log);
    return { netns, hostLink, hostAddress: host, nsAddress: ns };
  } catch (error) {
    await tearDownEgress(netns);
    throw error;
  }
}

/**
 * Removes a set's namespace and veth (idempotent), and the table once no set's link is
 * left on the host. The set's QEMU processes must be gone: a namespace is freed, and its veth
 * with it, only when no process is in it.
 */
export async function tearDownEgress(netns: string, record?: EgressRecord): Promise<void> {
  const exists = await namespaceExists(netns);
  if (!exists && !record) return;
  let hostLink = record?.hostLink;
  if (!hostLink && exists) {
    // The veth's peer index, read from inside: "N: eth0@ifM: ..."
    const out = await run(await tool("ip"), ["-n", netns, "-o", "link", "show", "eth0"]).catch(() => "");
    const peer = /@if(\d+)/.exec(out)?.[1];
    if (peer)
      hostLink = (await run(await tool("ip"), ["-o", "link", "show"])).match(
        new RegExp(`^${peer}:\\s+(${EGRESS_LINK_PREFIX}\\d+)@`, "m"),
      )?.[1];
  }
  if (hostLink) await run(await tool("ip"), ["link", "del", hostLink]).catch(() => undefined);
  if (exists) await run(await tool("ip"), ["netns", "del", netns]);
  if (!(await linkNames()).some((name) => name.startsWith(EGRESS_LINK_PREFIX))) {
    await run(await tool("nft"), ["delete", "table", "inet", NFT_TABLE]).catch(() => undefined);
  }
}

/** Set ids that have a namespace of this data directory on the host. */
export async function egressNamespaceSets(dataDir: string): Promise<string[]> {
  const prefix = namespacePrefix(dataDir);
  const names = await fs.readdir(NETNS_DIR).catch(() => [] as string[]);
  return names.filter((n) => n.startsWith(prefix)).map((n) => n.slice(prefix.length));
}

/** Pids of the processes in a namespace. */
export async function namespacePids(netns: string): Promise<number[]> {
  const out = await run(await tool("ip"), ["netns", "pids", netns]).catch(() => "");
  return out.split(/\s+/).filter(Boolean).map(Number);
}
