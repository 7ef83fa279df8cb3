/**
 * The QEMU provider against real VMs (TCG here: no usable KVM). Builds the lab base image once
 * into a cache directory kept across runs (keyed by the recipe hash; a cold build takes ~3-5 min),
 * then boots a 3-VM set and a 1-VM set and works through what the labs need, including
 * the default-deny network (probes from inside the VMs against sentinels this test owns:
 * server/testing/egress-sentinels.ts), and a 1-VM internet set (egress.ts) that is also
 * the crash-and-resume case, so the internet path costs no extra boot.
 * Sets live in a fresh temporary data directory; the test proves nothing of them is left.
 */
import fs from "node:fs/promises";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import pino from "pino";
import type { Client } from "ssh2";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { isNoCapacity, type ProvisionedMachine } from "../provider";
import { HostKeyMismatchError } from "../../ssh/connect";
import { connectSsh } from "../../ssh/connect";
import type { BuiltImage } from "./image";
import { generateEd25519 } from "../keys";
import { run } from "./command";
import { EGRESS_LINK_PREFIX, egressNamespace, egressNamespaceSets, tearDownEgress } from "./egress";
import { processArgv } from "./processes";
import { qemuProvider, type QemuProvider } from "./provider";
import { IMAGE_BUILD_TIMEOUT_MS, testImage } from "./test-image";
import {
  INTERNET_SENTINELS,
  NAMESPACE_SENTINELS,
  SENTINEL_PORT,
  startEgressSentinels,
  type EgressSentinels,
} from "../../testing/egress-sentinels";
import { adoptVm, stopVm } from "./vm";

/** Three VMs booting at once under TCG on 2 cores: 45-60 s measured; generous for a loaded host. */
const SET_TIMEOUT_MS = 300_000;
/** One command over SSH, ms. */
const COMMAND_TIMEOUT_MS = 45_000;
/** A reboot under TCG to SSH: 25-35 s measured on a quiet host, 120 s seen on a busy one. */
const REBOOT_TIMEOUT_MS = 300_000;
/** Start-to-SSH limit the provider gets, ms (its default is for production; a shared CI host is slower). */
const BOOT_TIMEOUT_MS = 300_000;
/** One egress probe from inside a VM (a denied connect hangs until this), s. */
const PROBE_TIMEOUT_S = 4;
/** Handshake and login of one test connection, ms. */
const LOGIN_TIMEOUT_MS = 20_000;

const SET_A = "test-a";
const SET_B = "test-b";
const SET_C = "test-c";
const MACHINES = ["controlplane", "node01", "node02"];

// error: provider warnings such as "VM stopped" are expected here (a second provider instance ends VMs the first one watches).
const log = pino({ level: "error" }, pino.destination(2));

let image: BuiltImage;
let dataDir: string;
let provider: QemuProvider;
let a: ProvisionedMachine[];
let b: ProvisionedMachine[];
let c: ProvisionedMachine[];
let sentinels: EgressSentinels | undefined;
/** Seconds from create to SSH of the 1-VM sets: B (default deny) and C (internet). */
const bootSeconds: Record<string, number> = {};
const IP_FORWARD = "/proc/sys/net/ipv4/ip_forward";
let forwardBefore: string | undefined;

function machine(list: ProvisionedMachine[], name: string): ProvisionedMachine {
  const found = list.find((m) => m.name === name);
  if (!found) throw new Error(`no machine ${name}`);
  return found;
}

/** Runs a command as root on a machine; resolves with its exit code and output. */
async function exec(m: ProvisionedMachine, command: string): Promise<{ code: number | null; out: string }> {
  const client = await connectSsh(m, LOGIN_TIMEOUT_MS);
  try {
    return await new Promise((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`${m.name}: ${command}: no exit within ${COMMAND_TIMEOUT_MS} ms`)),
        COMMAND_TIMEOUT_MS,
      );
      client.exec(command, (error, stream) => {
        if (error) return reject(error);
        let out = "";
        let code: number | null = null;
        stream.on("data", (d: Buffer) => (out += d.toString("utf8")));
        stream.stderr.on("data", (d: Buffer) => (out += d.toString("utf8")));
        stream.on("exit", (c: number | null) => (code = c));
        stream.on("close", () => {
          clearTimeout(timer);
          resolve({ code, out });
        });
      });
    });
  } finally {
    client.end();
  }
}

async function ok(m: ProvisionedMachine, command: string): Promise<string> {
  const result = await exec(m, command);
  if (result.code !== 0) throw new Error(`${m.name}: \`${command}\` exited ${result.code}: ${result.out}`);
  return result.out.trim();
}

/** Processes (qemu, vde_switch) whose argv names a path under `dir`. */
async function processesUnder(dir: string): Promise<number[]> {
  const pids: number[] = [];
  for (const entry of await fs.readdir("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    const argv = await processArgv(Number(entry));
    if (argv?.some((arg) => arg.includes(dir + "/"))) pids.push(Number(entry));
  }
  return pids;
}

async function vmPid(dir: string, setId: string, name: string): Promise<number> {
  return Number((await fs.readFile(path.join(dir, "sessions", setId, `vm-${name}`, "qemu.pid"), "utf8")).trim());
}

describe("qemu provider (real VMs)", () => {
  beforeAll(async () => {
    image = await testImage();
    forwardBefore = (await fs.readFile(IP_FORWARD, "utf8")).trim();
    // Short path: unix socket paths inside must stay under 108 bytes.
    dataDir = await fs.mkdtemp(path.join(os.tmpdir(), "ldq-"));
    provider = qemuProvider({ dataDir, image, log, bootTimeoutMs: BOOT_TIMEOUT_MS });
  }, IMAGE_BUILD_TIMEOUT_MS);

  afterAll(async () => {
    await sentinels?.stop();
    // This host's forwarding as it was (an internet set turns it on and production leaves it on).
    if (forwardBefore) await fs.writeFile(IP_FORWARD, `${forwardBefore}\n`).catch(() => undefined);
    if (!provider) return;
    await provider.destroy(SET_A, []).catch(() => undefined);
    await provider.destroy(SET_B, []).catch(() => undefined);
    await provider.destroy(SET_C, []).catch(() => undefined);
    if (dataDir) await fs.rm(dataDir, { recursive: true, force: true });
  }, 60_000);

  it(
    "boots a 3-VM set whose machines answer SSH with their pinned host keys",
    async () => {
      const started = Date.now();
      const creating = provider.create({ sessionId: SET_A, labSlug: "test", machines: MACHINES });
      // While they boot, a background boot (a pool spare) is refused at once (CPU admission), starting nothing.
      await new Promise((r) => setTimeout(r, 2_000));
      const spare = await provider
        .create({ sessionId: "test-spare", labSlug: "test", machines: ["node01"], background: true })
        .catch((e: unknown) => e);
      expect(isNoCapacity(spare)).toBe(true);
      expect((spare as Error).message).toMatch(/3 machines are booting/);
      await expect(fs.stat(path.join(dataDir, "sessions", "test-spare"))).rejects.toThrow();
      a = await creating;
      console.log(`3-VM set ready in ${((Date.now() - started) / 1000).toFixed(1)} s`);
      expect(a.map((m) => m.name)).toEqual(MACHINES);
      expect(new Set(a.map((m) => m.port)).size).toBe(3);
      expect(new Set(a.map((m) => m.hostKey)).size).toBe(3);
      for (const m of a) {
        expect(m.host).toBe("127.0.0.1");
        expect(m.providerRef).toBe(`${SET_A}/${m.name}`);
        expect(await ok(m, "hostname")).toBe(m.name);
      }
    },
    SET_TIMEOUT_MS,
  );

  it("refuses a machine whose host key is not the pinned one", async () => {
    const wrong = { ...machine(a, "node01"), hostKey: generateEd25519("wrong").publicKey };
    const error = await connectSsh(wrong).then(
      (client: Client) => {
        client.end();
        return null;
      },
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(HostKeyMismatchError);
    await expect(connectSsh(wrong, LOGIN_TIMEOUT_MS)).rejects.toBeInstanceOf(HostKeyMismatchError);
  });

  it("gives every eth0 10.0.2.15 and connects the machines on eth1", async () => {
    for (const m of a) {
      expect(await ok(m, "ip -4 -o addr show dev eth0")).toMatch(/inet 10\.0\.2\.15\/24/);
    }
    const cp = machine(a, "controlplane");
    expect(await ok(cp, "ip -4 -o addr show dev eth1")).toMatch(/inet 192\.168\.56\.10\/24/);
    await ok(cp, "ping -c 2 -W 5 node01 && ping -c 2 -W 5 192.168.56.12");
    await ok(machine(a, "node02"), "ping -c 2 -W 5 controlplane");
    expect(await ok(cp, "getent hosts node02")).toMatch(/^192\.168\.56\.12\s+node02/);
    expect(await ok(cp, "locale | head -n 1")).toBe("LANG=C.UTF-8");
    expect(await ok(cp, "printf '日本語\\n'")).toBe("日本語");
  }, 120_000);

  it("lets a lab change swap, modules, sysctl and units", async () => {
    const m = machine(a, "node01");
    // Swap made at run time (a sparse file made at image build is refused).
    await ok(
      m,
      "dd if=/dev/zero of=/swapfile bs=1M count=32 status=none && chmod 600 /swapfile && mkswap /swapfile >/dev/null && swapon /swapfile",
    );
    expect(await ok(m, "swapon --noheadings --show=NAME")).toContain("/swapfile");
    await ok(m, "swapoff -a");
    expect(await ok(m, "swapon --noheadings --show=NAME")).toBe("");
    await ok(m, "modprobe br_netfilter && modprobe overlay");
    expect(await ok(m, "lsmod")).toMatch(/^br_netfilter/m);
    await ok(m, "sysctl -w net.ipv4.ip_forward=1 >/dev/null && sysctl -w net.bridge.bridge-nf-call-iptables=1 >/dev/null");
    expect(await ok(m, "cat /proc/sys/net/ipv4/ip_forward")).toBe("1");
    await ok(
      m,
      "printf '[Unit]\\nDescription=test\\n[Service]\\nExecStart=/bin/sleep infinity\\n[Install]\\nWantedBy=multi-user.target\\n' > /etc/systemd/system/ldtest.service && systemctl daemon-reload && systemctl enable --now ldtest.service",
    );
    expect(await ok(m, "systemctl is-active ldtest.service")).toBe("active");
    await ok(m, "systemctl disable --now ldtest.service");
    expect((await exec(m, "systemctl is-enabled ldtest.service")).out.trim()).toBe("disabled");
  }, 120_000);

  it(
    "keeps a second set with the same eth1 addresses apart from the first",
    async () => {
      const started = Date.now();
      b = await provider.create({ sessionId: SET_B, labSlug: "test", machines: ["controlplane"] });
      bootSeconds.defaultDeny = (Date.now() - started) / 1000;
      console.log(`1-VM set ready in ${bootSeconds.defaultDeny.toFixed(1)} s`);
      const other = b[0]!;
      expect(await ok(other, "ip -4 -o addr show dev eth1")).toMatch(/inet 192\.168\.56\.10\/24/);
      expect(await ok(other, "ip -4 -o addr show dev eth0")).toMatch(/inet 10\.0\.2\.15\/24/);
      // 192.168.56.11 exists only in set A.
      const ping = await exec(other, "ping -c 2 -W 2 192.168.56.11");
      expect(ping.code).not.toBe(0);
      expect(await ok(other, "ip neigh show dev eth1 192.168.56.11")).not.toMatch(/lladdr/);
      // And set A's own controlplane still reaches its peers.
      await ok(machine(a, "controlplane"), "ping -c 1 -W 5 192.168.56.11");
    },
    SET_TIMEOUT_MS,
  );

  it("denies eth0 everything the guest starts: host loopback, another set's SSH, host, link-local, private ranges; eth1 works", async () => {
    sentinels = await startEgressSentinels();
    const s = sentinels;
    /** What a VM of a set must not reach: [what, address, port]; `otherSsh` is another set's forwarded SSH port. */
    const targetsFor = (otherSsh: number): [string, string, number][] => [
      ["host loopback (app/database stand-in)", "10.0.2.2", s.loopbackTcpPort],
      ["another set's SSH forward", "10.0.2.2", otherSsh],
      ["host address (LAN stand-in)", s.hostAddress, s.loopbackTcpPort],
      ...Object.entries(NAMESPACE_SENTINELS).map(([what, address]): [string, string, number] => [what, address, SENTINEL_PORT]),
      // A lab marked for internet is the only kind with outbound access.
      ...Object.entries(INTERNET_SENTINELS).map(([what, address]): [string, string, number] => [what, address, SENTINEL_PORT]),
    ];
    const fromA = { vm: machine(a, "node01"), targets: targetsFor(b[0]!.port) };
    const fromB = { vm: b[0]!, targets: targetsFor(machine(a, "controlplane").port) };
    // Every sentinel answers from this host (so a leak would connect) and counts it (the namespace's
    // listener reports over a pipe: wait for every count); then those hits are forgotten.
    const controls = [...fromA.targets, ...fromB.targets];
    for (const [, address, port] of controls) {
      await new Promise<void>((resolve, reject) => {
        const socket = net.connect({ host: address === "10.0.2.2" ? "127.0.0.1" : address, port }, () => {
          socket.destroy();
          resolve();
        });
        socket.once("error", reject);
      });
    }
    const ownSentinels = controls.filter(([what]) => what !== "another set's SSH forward").length;
    await expect.poll(() => s.hits().length, { timeout: 10_000 }).toBe(ownSentinels);
    s.clearHits();

    const script = (targets: [string, string, number][]) =>
      [
        // A TCP connect through bash; slirp drops a denied SYN, so the timeout decides.
        `probe() { if timeout ${PROBE_TIMEOUT_S} bash -c "exec 3<>/dev/tcp/$1/$2" 2>/dev/null; then echo "$1:$2 open"; else echo "$1:$2 closed"; fi; }`,
        ...targets.map(([, address, port]) => `probe ${address} ${port} &`),
        `echo leak > /dev/udp/10.0.2.2/${s.loopbackUdpPort}`,
        "wait",
      ].join("\n");
    const started = Date.now();
    const [outA, outB] = await Promise.all([fromA, fromB].map(async ({ vm, targets }) => (await exec(vm, script(targets))).out));
    const probeSeconds = (Date.now() - started) / 1000;
    // Give a late datagram, SYN or the namespace listener's report time to arrive before counting.
    await new Promise((r) => setTimeout(r, 2_000));
    const result = (out: string, address: string, port: number) =>
      out.includes(`${address}:${port} open`) ? "open" : out.includes(`${address}:${port} closed`) ? "closed" : "no answer";
    const rows = fromA.targets.map(([what, address, port], i) => {
      const [, addressB, portB] = fromB.targets[i]!;
      return {
        what,
        fromA: `${address}:${port} ${result(outA!, address, port)}`,
        fromB: `${addressB}:${portB} ${result(outB!, addressB, portB)}`,
      };
    });
    console.table(rows);
    console.log(`egress probes in ${probeSeconds.toFixed(1)} s; sentinel hits: ${JSON.stringify(s.hits())}`);
    expect(rows.filter((row) => !row.fromA.endsWith(" closed") || !row.fromB.endsWith(" closed"))).toEqual([]);
    expect(s.hits()).toEqual([]);

    // eth1: the set's machines still talk to each other (TCP here; ping in the test above).
    const node01 = machine(a, "node01");
    await ok(
      node01,
      [
        "cat > /root/eth1-listen.py <<'EOF'",
        "import socket",
        "s = socket.socket()",
        "s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)",
        's.bind(("192.168.56.11", 7777))',
        "s.listen()",
        "c, _ = s.accept()",
        'c.sendall(b"eth1-ok\\n")',
        "EOF",
        "nohup python3 /root/eth1-listen.py >/dev/null 2>&1 &",
      ].join("\n"),
    );
    await expect
      .poll(
        async () =>
          (await exec(machine(a, "controlplane"), "timeout 5 bash -c 'exec 3<>/dev/tcp/node01/7777 && head -n 1 <&3'")).out.trim(),
        { timeout: 30_000 },
      )
      .toBe("eth1-ok");
  }, 120_000);

  // A reboot and a poweroff from inside a guest are tested with the learner's terminal open, in
  // warm-pool.vm.test.ts (same QEMU process, disk, identity and eth1 after each): one TCG boot
  // each in CI instead of two.

  it("after a platform restart adopts live sets and removes ended ones", async () => {
    const setB = path.join(dataDir, "sessions", SET_B);
    expect((await processesUnder(setB)).length).toBe(2); // qemu + vde_switch
    const restarted = qemuProvider({ dataDir, image, log, bootTimeoutMs: BOOT_TIMEOUT_MS });
    const report = await restarted.adoptOrCleanup({ keep: (id) => id === SET_A });
    expect(report).toEqual({ adopted: [SET_A], cleaned: [SET_B] });
    expect(await processesUnder(setB)).toEqual([]);
    await expect(fs.stat(setB)).rejects.toThrow();
    expect((await restarted.health(SET_A, a)).map((h) => h.state)).toEqual(["running", "running", "running"]);
    expect(await ok(machine(a, "controlplane"), "hostname")).toBe("controlplane");
    provider = restarted;
  }, 120_000);

  it(
    "resets a machine to a fresh disk with the same name, eth1 address and pinned host key",
    async () => {
      const m = machine(a, "node01");
      await ok(m, "echo gone > /root/reset-marker && sync");
      const started = Date.now();
      await provider.reset(SET_A, m);
      console.log(`reset (fresh overlay, boot to SSH) in ${((Date.now() - started) / 1000).toFixed(1)} s`);
      // ok() logs in with the pinned host key: it is unchanged.
      expect(await ok(m, "test -e /root/reset-marker && echo present || echo absent")).toBe("absent");
      expect(await ok(m, "hostname")).toBe("node01");
      expect(await ok(m, "ip -4 -o addr show dev eth1")).toMatch(/192\.168\.56\.11\/24/);
      await ok(machine(a, "controlplane"), "ping -c 1 -W 5 node01");
    },
    REBOOT_TIMEOUT_MS,
  );

  it(
    "adopts a live internet set whose VMs and namespace are gone (host crash) as suspended, and resumes it with its disk and a new namespace",
    async () => {
      const bootStarted = Date.now();
      c = await provider.create({ sessionId: SET_C, labSlug: "online", machines: ["controlplane"], internet: true });
      bootSeconds.internet = (Date.now() - bootStarted) / 1000;
      console.log(
        `1-VM internet set ready in ${bootSeconds.internet.toFixed(1)} s (1-VM default-deny set, same run: ${bootSeconds.defaultDeny?.toFixed(1)} s)`,
      );
      // SSH goes to slirp's forward on the namespace's address, not to a loopback port.
      expect(c[0]!.host).toMatch(/^10\.253\.\d+\.\d+$/);
      expect(await ok(c[0]!, "ip -4 -o addr show dev eth0")).toMatch(/inet 10\.0\.2\.15\/24/);
      await ok(c[0]!, "echo survives-a-crash > /root/crash-marker && sync");
      // A host crash: the VMs, and with a host reboot the namespace and its veth, are gone.
      for (const pid of await processesUnder(path.join(dataDir, "sessions", SET_C))) process.kill(pid, "SIGKILL");
      await expect.poll(() => processesUnder(path.join(dataDir, "sessions", SET_C)), { timeout: 10_000 }).toEqual([]);
      await tearDownEgress(egressNamespace(dataDir, SET_C));

      const restarted = qemuProvider({ dataDir, image, log, bootTimeoutMs: BOOT_TIMEOUT_MS });
      const report = await restarted.adoptOrCleanup({ keep: (id) => id === SET_A || id === SET_C });
      expect(report.adopted).toEqual([SET_A, SET_C]);
      expect((await restarted.list()).find((s) => s.sessionId === SET_C)?.phase).toBe("suspended");
      const started = Date.now();
      c = await restarted.resume(SET_C, c);
      console.log(`resume of a crashed 1-VM internet set (namespace made again) in ${((Date.now() - started) / 1000).toFixed(1)} s`);
      expect(await ok(c[0]!, "cat /root/crash-marker")).toBe("survives-a-crash");
      provider = restarted;
    },
    SET_TIMEOUT_MS * 2,
  );

  it("gives an internet set's VM public addresses through the host's NAT and nothing of the host or private ranges; eth1 is up", async () => {
    const vm = c[0]!;
    const s = sentinels ?? (sentinels = await startEgressSentinels());
    // The host side of the set's veth (.1 of the namespace's /30): a listener this test owns.
    const vethHost = vm.host.replace(/\.(\d+)$/, (_, last: string) => `.${Number(last) - 1}`);
    const vethHits: string[] = [];
    const veth = net.createServer((socket) => {
      vethHits.push(socket.remoteAddress ?? "?");
      socket.destroy();
    });
    await new Promise<void>((resolve) => veth.listen(s.loopbackTcpPort, vethHost, resolve));
    try {
      // It answers from this host (so a leak would connect and be counted); then that hit is forgotten.
      await new Promise<void>((resolve, reject) => net.connect({ host: vethHost, port: s.loopbackTcpPort }, resolve).once("error", reject));
      await expect.poll(() => vethHits.length, { timeout: 5_000 }).toBe(1);
      vethHits.splice(0);
      const denied: [string, string, number][] = [
        ["host loopback (app/database stand-in)", "10.0.2.2", s.loopbackTcpPort],
        ["another set's SSH forward", "10.0.2.2", machine(a, "controlplane").port],
        ["host address (LAN stand-in)", s.hostAddress, s.loopbackTcpPort],
        ["host side of the set's veth", vethHost, s.loopbackTcpPort],
        ...Object.entries(NAMESPACE_SENTINELS).map(([what, address]): [string, string, number] => [what, address, SENTINEL_PORT]),
      ];
      const allowed = Object.entries(INTERNET_SENTINELS).map(([what, address]): [string, string, number] => [what, address, SENTINEL_PORT]);
      s.clearHits();
      const script = [
        `probe() { if timeout ${PROBE_TIMEOUT_S} bash -c "exec 3<>/dev/tcp/$1/$2" 2>/dev/null; then echo "$1:$2 open"; else echo "$1:$2 closed"; fi; }`,
        ...[...denied, ...allowed].map(([, address, port]) => `probe ${address} ${port} &`),
        `echo leak > /dev/udp/10.0.2.2/${s.loopbackUdpPort}`,
        "wait",
      ].join("\n");
      const started = Date.now();
      const out = (await exec(vm, script)).out;
      const probeSeconds = (Date.now() - started) / 1000;
      await new Promise((r) => setTimeout(r, 2_000));
      const result = (address: string, port: number) =>
        out.includes(`${address}:${port} open`) ? "open" : out.includes(`${address}:${port} closed`) ? "closed" : "no answer";
      const rows = [...denied, ...allowed].map(([what, address, port]) => ({
        what,
        target: `${address}:${port}`,
        result: result(address, port),
      }));
      console.table(rows);
      console.log(`internet set probes in ${probeSeconds.toFixed(1)} s; sentinel hits: ${JSON.stringify(s.hits())}`);
      expect(
        rows.filter((row) => row.result !== (allowed.some(([, address]) => row.target.startsWith(`${address}:`)) ? "open" : "closed")),
      ).toEqual([]);
      // Only the public sentinels were hit, each from the host's NAT (the address of the host's side
      // towards them), not from the guest's 10.0.2.15 or the namespace's address.
      expect(
        s
          .hits()
          .map((h) => h.target)
          .sort(),
      ).toEqual(allowed.map(([, address, port]) => `${address}:${port}`).sort());
      for (const hit of s.hits()) expect(hit.from).toBe(s.hostAddress);
      expect(vethHits).toEqual([]);
    } finally {
      veth.close();
    }
    // eth1 is on the set's switch (QEMU in the namespace reaches it by its unix socket): address and carrier.
    expect(await ok(vm, "ip -4 -o addr show dev eth1")).toMatch(/inet 192\.168\.56\.10\/24/);
    expect(await ok(vm, "ip -o link show dev eth1")).toMatch(/LOWER_UP/);
  }, 120_000);

  it("removes an ended internet set after a restart: VM, namespace and veth", async () => {
    const state = JSON.parse(await fs.readFile(path.join(dataDir, "sessions", SET_C, "state.json"), "utf8")) as {
      egress: { netns: string; hostLink: string };
    };
    expect(state.egress.hostLink.startsWith(EGRESS_LINK_PREFIX)).toBe(true);
    const restarted = qemuProvider({ dataDir, image, log, bootTimeoutMs: BOOT_TIMEOUT_MS });
    const report = await restarted.adoptOrCleanup({ keep: (id) => id === SET_A });
    expect(report).toEqual({ adopted: [SET_A], cleaned: [SET_C] });
    expect(await processesUnder(path.join(dataDir, "sessions", SET_C))).toEqual([]);
    await expect(fs.stat(path.join("/run/netns", state.egress.netns))).rejects.toThrow();
    expect(await run("ip", ["-o", "link", "show"])).not.toContain(`${state.egress.hostLink}@`);
    provider = restarted;
  }, 120_000);

  it("stops a VM gracefully through its monitor (ACPI power button)", async () => {
    const dir = path.join(dataDir, "sessions", SET_A, "vm-controlplane");
    const vm = await adoptVm("controlplane", dir, await vmPid(dataDir, SET_A, "controlplane"));
    expect(vm).not.toBeNull();
    const started = Date.now();
    await stopVm(vm!, 90_000);
    console.log(`graceful stop in ${((Date.now() - started) / 1000).toFixed(1)} s`);
    expect(vm!.hasExited() || (await vm!.exited.then(() => true))).toBe(true);
    expect(await fs.readFile(path.join(dir, "serial.log"), "utf8")).toMatch(/reboot: Power down/);
    expect((await provider.health(SET_A, [machine(a, "controlplane")]))[0]!.state).toBe("stopped");
  }, 120_000);

  it("refuses a set that does not fit in memory, starting nothing", async () => {
    const greedy = qemuProvider({ dataDir, image, log, memoryMiB: 1024 * 1024 });
    const error = await greedy.create({ sessionId: "test-big", labSlug: "test", machines: MACHINES }).catch((e: unknown) => e);
    expect(isNoCapacity(error)).toBe(true);
    await expect(fs.stat(path.join(dataDir, "sessions", "test-big"))).rejects.toThrow();
  });

  it("destroy leaves no process, socket or disk behind and is idempotent", async () => {
    await provider.destroy(SET_A, a);
    await provider.destroy(SET_A, a);
    expect(await processesUnder(dataDir)).toEqual([]);
    expect(await fs.readdir(path.join(dataDir, "sessions"))).toEqual([]);
    expect(await provider.list()).toEqual([]);
    expect(await egressNamespaceSets(dataDir)).toEqual([]);
  }, 60_000);
});
