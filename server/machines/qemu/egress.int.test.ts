/**
 * The internet sessions' egress path without a VM (egress.ts): a session namespace, its veth and
 * the `inet labdeck` nftables table, probed from inside the namespace (where slirp's sockets
 * would be) against sentinels this test owns (server/testing/egress-sentinels.ts, netns, root).
 * Run under `flock /tmp/labdeck-test.lock` (fixed namespace names and addresses).
 */
import { spawn } from "node:child_process";
import fs from "node:fs/promises";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  INTERNET_SENTINELS,
  NAMESPACE_SENTINELS,
  SENTINEL_PORT,
  startEgressSentinels,
  type EgressSentinels,
} from "../../testing/egress-sentinels";
import { run } from "./command";
import {
  EGRESS_LINK_PREFIX,
  NFT_TABLE,
  egressNamespace,
  egressNamespaceSets,
  inNamespace,
  setUpEgress,
  tearDownEgress,
  type EgressRecord,
} from "./egress";

/** A connect that is dropped hangs until this, ms. */
const PROBE_TIMEOUT_MS = 2_000;
const IP_FORWARD = "/proc/sys/net/ipv4/ip_forward";

const log = pino({ level: "error" }, pino.destination(2));

let sentinels: EgressSentinels;
let dataDir: string;
let forwardBefore: string;
let record: EgressRecord | undefined;

/** TCP connects from inside a namespace: "open" or "closed" per `host:port`. */
async function probeFrom(netns: string, targets: [string, number][]): Promise<Record<string, string>> {
  const script = `
const net = require("node:net");
const targets = JSON.parse(process.argv[1]);
Promise.all(targets.map(([host, port]) => new Promise((resolve) => {
  const s = net.connect({ host, port });
  const done = (r) => { s.destroy(); resolve([host + ":" + port, r]); };
  s.setTimeout(${PROBE_TIMEOUT_MS}, () => done("closed"));
  s.once("connect", () => done("open"));
  s.once("error", () => done("closed"));
}))).then((r) => console.log(JSON.stringify(Object.fromEntries(r))));`;
  const prefix = await inNamespace(netns);
  const out = await run(prefix[0]!, [...prefix.slice(1), process.execPath, "-e", script, JSON.stringify(targets)]);
  return JSON.parse(out) as Record<string, string>;
}

describe("egress path of internet sessions (netns + nftables, no VM)", () => {
  beforeAll(async () => {
    forwardBefore = (await fs.readFile(IP_FORWARD, "utf8")).trim();
    sentinels = await startEgressSentinels();
    dataDir = await fs.mkdtemp(path.join(os.tmpdir(), "ldq-egress-"));
  });

  afterAll(async () => {
    if (record) await tearDownEgress(record.netns, record).catch(() => undefined);
    await sentinels?.stop();
    // This host's forwarding as it was (production leaves it on; a shared test host should not).
    if (forwardBefore) await fs.writeFile(IP_FORWARD, `${forwardBefore}\n`);
    if (dataDir) await fs.rm(dataDir, { recursive: true, force: true });
  });

  it("sets up a session namespace whose traffic reaches public addresses through NAT and nothing of the host or private ranges", async () => {
    const started = process.hrtime.bigint();
    record = await setUpEgress(dataDir, "unit-a", log);
    const setupMs = Number(process.hrtime.bigint() - started) / 1e6;
    console.log(`egress set-up (netns, veth, addresses, nft table) in ${setupMs.toFixed(0)} ms: ${JSON.stringify(record)}`);
    expect(record.netns).toBe(egressNamespace(dataDir, "unit-a"));
    expect(record.hostLink.startsWith(EGRESS_LINK_PREFIX)).toBe(true);
    expect(await egressNamespaceSets(dataDir)).toEqual(["unit-a"]);
    expect((await fs.readFile(IP_FORWARD, "utf8")).trim()).toBe("1");
    // No IPv6 inside: no address, no route.
    expect((await run("ip", ["-n", record.netns, "-6", "addr", "show"])).trim()).toBe("");
    expect((await run("ip", ["-n", record.netns, "-6", "route", "show"])).trim()).toBe("");

    // A listener on the host side of the session's own veth: the host itself, seen from the namespace.
    const hostHits: string[] = [];
    const own = net.createServer((socket) => {
      hostHits.push(socket.remoteAddress ?? "?");
      socket.destroy();
    });
    await new Promise<void>((resolve) => own.listen(0, record!.hostAddress, resolve));
    const ownPort = (own.address() as net.AddressInfo).port;
    try {
      sentinels.clearHits();
      const denied: [string, number][] = [
        [record.hostAddress, ownPort],
        [sentinels.hostAddress, sentinels.loopbackTcpPort],
        ...Object.values(NAMESPACE_SENTINELS).map((a): [string, number] => [a, SENTINEL_PORT]),
      ];
      const allowed = Object.values(INTERNET_SENTINELS).map((a): [string, number] => [a, SENTINEL_PORT]);
      const results = await probeFrom(record.netns, [...denied, ...allowed]);
      console.table(results);
      for (const [host, port] of denied) expect(results[`${host}:${port}`], `${host}:${port}`).toBe("closed");
      for (const [host, port] of allowed) expect(results[`${host}:${port}`], `${host}:${port}`).toBe("open");
      await expect.poll(() => sentinels.hits().length, { timeout: 5_000 }).toBe(allowed.length);
      // Only the public sentinels were hit, from the host's address (masqueraded), not the namespace's.
      expect(
        sentinels
          .hits()
          .map((h) => h.target)
          .sort(),
      ).toEqual(allowed.map(([a, p]) => `${a}:${p}`).sort());
      for (const hit of sentinels.hits()) expect(hit.from).toBe(sentinels.hostAddress);
      expect(hostHits).toEqual([]);
    } finally {
      own.close();
    }
  });

  it("lets the host connect into the namespace (the platform's SSH to slirp's hostfwd) and nothing else in", async () => {
    const prefix = await inNamespace(record!.netns);
    const listener = spawn(prefix[0]!, [
      ...prefix.slice(1),
      process.execPath,
      "-e",
      `require("node:net").createServer((s) => s.end("in\\n")).listen(2222, "${record!.nsAddress}", () => console.log("up"))`,
    ]);
    try {
      await new Promise<void>((resolve) => listener.stdout.once("data", () => resolve()));
      const answer = await new Promise<string>((resolve, reject) => {
        const s = net.connect({ host: record!.nsAddress, port: 2222 });
        let text = "";
        s.on("data", (d) => (text += d.toString()));
        s.on("end", () => resolve(text.trim()));
        s.on("error", reject);
      });
      expect(answer).toBe("in");
    } finally {
      listener.kill("SIGTERM");
    }
  });

  it("tears the namespace, veth and table down, idempotently", async () => {
    const r = record!;
    const started = process.hrtime.bigint();
    await tearDownEgress(r.netns, r);
    console.log(`egress teardown in ${(Number(process.hrtime.bigint() - started) / 1e6).toFixed(0)} ms`);
    await tearDownEgress(r.netns, r);
    expect(await egressNamespaceSets(dataDir)).toEqual([]);
    await expect(fs.stat(path.join("/run/netns", r.netns))).rejects.toThrow();
    expect(await run("ip", ["-o", "link", "show"])).not.toContain(`${r.hostLink}@`);
    const links = await run("ip", ["-o", "link", "show"]);
    if (!links.includes(`${EGRESS_LINK_PREFIX}`)) expect(await run("nft", ["list", "tables"])).not.toContain(`inet ${NFT_TABLE}`);
    record = undefined;
  });

  it("finds a crashed session's namespace by its name alone and removes it with its veth", async () => {
    const r = await setUpEgress(dataDir, "unit-b", log);
    // No state: only the session id is known (a crash before the state file was written).
    await tearDownEgress(egressNamespace(dataDir, "unit-b"));
    await expect(fs.stat(path.join("/run/netns", r.netns))).rejects.toThrow();
    expect(await run("ip", ["-o", "link", "show"])).not.toContain(`${r.hostLink}@`);
  });
});
