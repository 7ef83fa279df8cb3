/**
 * Sentinel listeners for egress tests of lab machines: every address a VM must not reach gets a
 * listener this test owns, so a leak lands here and is counted instead of leaving this machine.
 *
 *   host loopback   127.0.0.1:<tcp port>, 127.0.0.1:<udp port>   (a VM sees it as 10.0.2.2)
 *   host address    10.254.255.1:<tcp port> on the host side of the veth (stands for the host's LAN address)
 *   netns ldq-sentinel (veth ldqsnt-h <-> eth0, 10.254.255.0/30), reached by /32 routes on the host:
 *     169.254.169.254  a cloud's metadata service (link-local)
 *     10.254.0.1, 172.31.254.1, 192.168.254.1  RFC 1918
 *     100.64.254.1     shared address space (carrier-grade NAT)
 *     198.51.100.10, 203.0.113.10  "the internet": public addresses (TEST-NET-2/3, never routed on
 *                      the real internet) that only a lab marked for internet may reach
 *
 * `start` refuses to go on unless the host routes each namespace address into the namespace
 * (`ip route get`), so a probe can never go to a real address outside this machine. Root only;
 * run under `flock /tmp/labdeck-test.lock` (fixed names and addresses).
 */
import { spawn, type ChildProcess } from "node:child_process";
import dgram from "node:dgram";
import net from "node:net";
import { run } from "../machines/qemu/command";

const NAMESPACE = "ldq-sentinel";
const HOST_LINK = "ldqsnt-h";
const HOST_SIDE = "10.254.255.1";
const NS_SIDE = "10.254.255.2";
/** Port every namespace sentinel listens on. */
export const SENTINEL_PORT = 8080;
/** Addresses inside the namespace, by what they stand for. */
export const NAMESPACE_SENTINELS = {
  "link-local (metadata)": "169.254.169.254",
  "RFC 1918 10/8": "10.254.0.1",
  "RFC 1918 172.16/12": "172.31.254.1",
  "RFC 1918 192.168/16": "192.168.254.1",
  "shared 100.64/10": "100.64.254.1",
} as const;
/** Public addresses inside the namespace: what an internet session's VM may reach (and nothing else of this list). */
export const INTERNET_SENTINELS = {
  "internet (TEST-NET-2)": "198.51.100.10",
  "internet (TEST-NET-3)": "203.0.113.10",
} as const;
/** Every address the namespace listens on. */
const ALL_NAMESPACE_ADDRESSES = [...Object.values(NAMESPACE_SENTINELS), ...Object.values(INTERNET_SENTINELS)];
/** How long the namespace's listener process gets to report it listens, ms. */
const LISTEN_TIMEOUT_MS = 10_000;

/** One connection (or datagram) a sentinel received. */
export interface SentinelHit {
  /** The address and port the sentinel listens on (`host:port`, `udp host:port`). */
  target: string;
  from: string;
}

export interface EgressSentinels {
  /** TCP port on 127.0.0.1 and on HOST_SIDE. */
  loopbackTcpPort: number;
  /** UDP port on 127.0.0.1. */
  loopbackUdpPort: number;
  /** The host side of the veth: a non-loopback address of this host (and the source an internet session's NAT gives its traffic to the namespace). */
  hostAddress: string;
  /** Everything received so far. */
  hits(): SentinelHit[];
  /** Forgets the hits so far (after the host's own reachability checks). */
  clearHits(): void;
  stop(): Promise<void>;
}

/** Listener script run inside the namespace: prints one line per connection. */
const NAMESPACE_LISTENER = `
const net = require("node:net");
const [port, ...hosts] = process.argv.slice(1);
let listening = 0;
for (const host of hosts) {
  net
    .createServer((socket) => {
      // A peer that resets (the host's own reachability check) must not end the listener.
      socket.on("error", () => {});
      console.log("hit " + host + ":" + port + " " + socket.remoteAddress);
      socket.end("sentinel\\n");
    })
    .listen(Number(port), host, () => {
      if (++listening === hosts.length) console.log("listening");
    });
}
`;

async function removeNamespace(): Promise<void> {
  for (const address of ALL_NAMESPACE_ADDRESSES) await run("ip", ["route", "del", `${address}/32`]).catch(() => undefined);
  await run("ip", ["link", "del", HOST_LINK]).catch(() => undefined);
  await run("ip", ["netns", "del", NAMESPACE]).catch(() => undefined);
}

export async function startEgressSentinels(): Promise<EgressSentinels> {
  const hits: SentinelHit[] = [];
  // A namespace of this name is only ever this helper's (a crashed earlier run).
  await removeNamespace();
  await run("ip", ["netns", "add", NAMESPACE]);
  let child: ChildProcess | undefined;
  const servers: (net.Server | dgram.Socket)[] = [];
  try {
    await run("ip", ["-n", NAMESPACE, "link", "set", "lo", "up"]);
    await run("ip", ["link", "add", HOST_LINK, "type", "veth", "peer", "name", "eth0", "netns", NAMESPACE]);
    await run("ip", ["addr", "add", `${HOST_SIDE}/30`, "dev", HOST_LINK]);
    await run("ip", ["link", "set", HOST_LINK, "up"]);
    await run("ip", ["-n", NAMESPACE, "addr", "add", `${NS_SIDE}/30`, "dev", "eth0"]);
    for (const address of ALL_NAMESPACE_ADDRESSES) await run("ip", ["-n", NAMESPACE, "addr", "add", `${address}/32`, "dev", "eth0"]);
    await run("ip", ["-n", NAMESPACE, "link", "set", "eth0", "up"]);
    await run("ip", ["-n", NAMESPACE, "route", "add", "default", "via", HOST_SIDE]);
    for (const address of ALL_NAMESPACE_ADDRESSES) {
      await run("ip", ["route", "replace", `${address}/32`, "via", NS_SIDE, "dev", HOST_LINK]);
      const stdout = await run("ip", ["route", "get", address]);
      if (!stdout.includes(`dev ${HOST_LINK}`))
        throw new Error(`egress sentinels: ${address} is not routed into ${NAMESPACE} (${stdout.trim()}); refusing to probe it`);
    }

    child = spawn(
      "ip",
      ["netns", "exec", NAMESPACE, process.execPath, "-e", NAMESPACE_LISTENER, String(SENTINEL_PORT), ...ALL_NAMESPACE_ADDRESSES],
      {
        stdio: ["ignore", "pipe", "inherit"],
      },
    );
    const spawned = child;
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error("egress sentinels: the namespace listener did not start")), LISTEN_TIMEOUT_MS);
      let buffered = "";
      spawned.stdout!.on("data", (chunk: Buffer) => {
        buffered += chunk.toString("utf8");
        for (let nl = buffered.indexOf("\n"); nl >= 0; nl = buffered.indexOf("\n")) {
          const line = buffered.slice(0, nl);
          buffered = buffered.slice(nl + 1);
          if (line === "listening") {
            clearTimeout(timer);
            resolve();
          }
          const hit = /^hit (\S+) (\S+)$/.exec(line);
          if (hit) hits.push({ target: hit[1]!, from: hit[2]! });
        }
      });
      spawned.once("exit", (code) => reject(new Error(`egress sentinels: the namespace listener exited (${code})`)));
    });

    const tcp = (host: string, port: number) =>
      new Promise<number>((resolve, reject) => {
        const server = net.createServer((socket) => {
          socket.on("error", () => undefined);
          hits.push({ target: `${host}:${(server.address() as net.AddressInfo).port}`, from: socket.remoteAddress ?? "?" });
          socket.end("sentinel\n");
        });
        servers.push(server);
        server.once("error", reject);
        server.listen(port, host, () => resolve((server.address() as net.AddressInfo).port));
      });
    const loopbackTcpPort = await tcp("127.0.0.1", 0);
    await tcp(HOST_SIDE, loopbackTcpPort);
    const udp = dgram.createSocket("udp4");
    servers.push(udp);
    udp.on("message", (_message, remote) => hits.push({ target: `udp 127.0.0.1:${udp.address().port}`, from: remote.address }));
    await new Promise<void>((resolve, reject) => {
      udp.once("error", reject);
      udp.bind(0, "127.0.0.1", () => resolve());
    });

    return {
      loopbackTcpPort,
      loopbackUdpPort: udp.address().port,
      hostAddress: HOST_SIDE,
      hits: () => [...hits],
      clearHits: () => void hits.splice(0),
      stop: async () => {
        for (const server of servers) server.close();
        child?.kill("SIGTERM");
        await removeNamespace();
      },
    };
  } catch (error) {
    for (const server of servers) server.close();
    child?.kill("SIGTERM");
    await removeNamespace();
    throw error;
  }
}
