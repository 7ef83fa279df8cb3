/**
 * connectSsh's two limits, on a real sshd in a network namespace: the machine must start answering
 * (its banner) within the ready timeout, but once it has, a slow key exchange and login are waited
 * for. A loopback proxy in front of sshd plays the slow TCG guest (it holds back every byte sshd
 * sends after its banner) and the down guest behind QEMU's NAT (it accepts and never speaks).
 */
import { mkdtemp, rm } from "node:fs/promises";
import net from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { createNetnsHosts, type NetnsHost, type NetnsHostSet } from "../testing/netns-hosts";
import { connectSsh } from "./connect";

/** Unused by every other test (grep `subnet:` and `SUBNET =` in server/ and e2e/). */
const SUBNET = 72;
/** The ready timeout the tests give connectSsh, ms. */
const READY_MS = 1_000;
/** How long the slow proxy holds back sshd's bytes after the banner, ms: well past READY_MS. */
const HOLD_MS = 1_500;

let dir: string;
let set: NetnsHostSet;
let host: NetnsHost;
const servers: net.Server[] = [];

/** A loopback listener whose connections `handle` serves; its port. */
async function listen(handle: (socket: net.Socket) => void): Promise<number> {
  const server = net.createServer(handle);
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return (server.address() as net.AddressInfo).port;
}

/** Forwards to sshd; what sshd sends after its first chunk (the banner) is delayed by HOLD_MS. */
function slowAfterBanner(client: net.Socket): void {
  const upstream = net.connect({ host: host.host, port: host.port });
  let chunks = 0;
  upstream.on("data", (data) => {
    if (chunks++ === 0) client.write(data);
    else setTimeout(() => client.writable && client.write(data), HOLD_MS);
  });
  client.on("data", (data) => upstream.write(data));
  client.on("close", () => upstream.destroy());
  upstream.on("close", () => setTimeout(() => client.destroy(), HOLD_MS));
  client.on("error", () => upstream.destroy());
  upstream.on("error", () => client.destroy());
}

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), "labdeck-ssh-connect-"));
  set = await createNetnsHosts({ id: "sc", names: ["node01"], subnet: SUBNET, dir: path.join(dir, "hosts") });
  host = set.hosts[0]!;
}, 60_000);

afterAll(async () => {
  for (const server of servers) server.close();
  await set?.destroy();
  await rm(dir, { recursive: true, force: true });
});

describe("connectSsh: the banner within the ready timeout, then time for a slow login", () => {
  it("logs in to a machine that sent its banner at once and then took longer than the ready timeout", async () => {
    const port = await listen(slowAfterBanner);
    // The ready timeout's moment, on a timer started before connectSsh's own: it fires first.
    let readyTimeoutPassed = false;
    const marker = setTimeout(() => (readyTimeoutPassed = true), READY_MS);
    try {
      const client = await connectSsh({ ...host, port, host: "127.0.0.1" }, READY_MS);
      client.end();
    } finally {
      clearTimeout(marker);
    }
    // Logged in although the ready timeout passed meanwhile: the banner ended its rule.
    expect(readyTimeoutPassed).toBe(true);
  }, 30_000);

  it("gives up on a machine that accepts and never speaks once the ready timeout passes, saying so", async () => {
    const server = net.createServer(() => undefined);
    servers.push(server);
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const port = (server.address() as net.AddressInfo).port;
    const accepted = new Promise((resolve) => server.once("connection", resolve));
    // connectSsh's timers on a fake clock (the sockets stay real): the ready timeout is counted
    // exactly, not measured.
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
    try {
      let settled: string | null = null;
      const attempt = connectSsh({ ...host, port, host: "127.0.0.1" }, READY_MS).then(
        (client) => (client.end(), (settled = "connected")),
        (error: Error) => (settled = error.message),
      );
      await accepted; // the machine took the connection and says nothing
      vi.advanceTimersByTime(READY_MS - 1);
      await new Promise((r) => setImmediate(r));
      expect(settled).toBeNull();
      vi.advanceTimersByTime(1);
      await attempt;
      expect(settled).toMatch(/no SSH banner within 1000 ms/);
    } finally {
      vi.useRealTimers();
    }
  }, 30_000);

  it("still refuses a wrong host key on the slow path", async () => {
    const port = await listen(slowAfterBanner);
    const other = set.hosts[0]!.hostKey.replace(/[A-Za-z0-9+/]{8}(=*)$/, "AAAAAAAA$1");
    await expect(connectSsh({ ...host, port, host: "127.0.0.1", hostKey: other }, READY_MS)).rejects.toThrow(/host key does not match/);
  }, 30_000);
});
