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
import { afterAll, beforeAll, describe, expect, it } from "vitest";
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
    const started = Date.now();
    const client = await connectSsh({ ...host, port, host: "127.0.0.1" }, READY_MS);
    const tookMs = Date.now() - started;
    client.end();
    expect(tookMs).toBeGreaterThan(READY_MS);
  }, 30_000);

  it("gives up on a machine that accepts and never speaks after the ready timeout, saying so", async () => {
    const port = await listen(() => undefined);
    const started = Date.now();
    await expect(connectSsh({ ...host, port, host: "127.0.0.1" }, READY_MS)).rejects.toThrow(/no SSH banner within 1000 ms/);
    expect(Date.now() - started).toBeLessThan(READY_MS + 2_000);
  }, 30_000);

  it("still refuses a wrong host key on the slow path", async () => {
    const port = await listen(slowAfterBanner);
    const other = set.hosts[0]!.hostKey.replace(/[A-Za-z0-9+/]{8}(=*)$/, "AAAAAAAA$1");
    await expect(connectSsh({ ...host, port, host: "127.0.0.1", hostKey: other }, READY_MS)).rejects.toThrow(/host key does not match/);
  }, 30_000);
});
