/**
 * The warm pool in front of the QEMU provider, with real VMs (TCG here), the real gateway and a
 * real database: a learner's session gets an already booted set (SSH answers at once), the pool
 * refills behind the hand-out, a reboot from inside a VM keeps the learner's open terminal (it
 * re-attaches when SSH is back) and the disk, and ending everything leaves no process or disk.
 */
import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { endSession, machineEndpoint, restartMachine } from "../sessions/lab-sessions";
import { CloseCode } from "../terminal/protocol";
import { connectSsh } from "../terminal/ssh";
import { LAB_MACHINES, startStack, type Stack } from "../testing/stack";
import { TerminalTestClient } from "../testing/terminal-client";
import { processArgv } from "./qemu/processes";
import { qemuProvider } from "./qemu/provider";
import { IMAGE_BUILD_TIMEOUT_MS, testImage } from "./qemu/test-image";
import { WarmPool } from "./warm-pool";

/** Three VMs booting at once under TCG on a shared 2-core host: 65-73 s measured quiet, 280 s at load 10. */
const FILL_TIMEOUT_MS = 600_000;
/** Start-to-SSH limit per VM the provider gets here (its production default is 240 s). */
const BOOT_TIMEOUT_MS = 540_000;
/** A reboot to SSH under TCG: 34-49 s measured, slower while the pool refills beside it. */
const REBOOT_TIMEOUT_MS = 300_000;
/**
 * Login timeout for "answers at once": a booted VM logs in within ~1 s; a VM still booting would
 * need 30+ s, so this fails if the hand-out were a cold start.
 */
const READY_LOGIN_TIMEOUT_MS = 15_000;

/** Idle time of the stack's sweeper; sweeps are called with a clock past it. */
const IDLE_MS = 60_000;

const log = pino({ level: "warn" }, pino.destination(2));

let dataDir: string;
let pool: WarmPool;
let stack: Stack;
let sessionId: string;

async function processesUnder(dir: string): Promise<number[]> {
  const pids: number[] = [];
  for (const entry of await fs.readdir("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    const argv = await processArgv(Number(entry));
    if (argv?.some((arg) => arg.includes(dir + "/"))) pids.push(Number(entry));
  }
  return pids;
}

/** Niceness of every QEMU process of a provider session, from /proc/<pid>/stat (field 19). */
async function niceOfSession(providerSession: string): Promise<number[]> {
  const pids = await processesUnder(path.join(dataDir, "sessions", providerSession));
  const values: number[] = [];
  for (const pid of pids) {
    const argv = (await processArgv(pid)) ?? [];
    if (!argv[0]?.includes("qemu-system")) continue;
    const stat = await fs.readFile(`/proc/${pid}/stat`, "utf8");
    values.push(Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[16]));
  }
  return values;
}

function statusStates(client: TerminalTestClient): string[] {
  return client.messages.flatMap((m) => (m.type === "status" ? [m.state] : []));
}

describe("warm pool over the QEMU provider (real VMs)", () => {
  beforeAll(async () => {
    const image = await testImage();
    dataDir = await fs.mkdtemp(path.join(os.tmpdir(), "ldp-")); // short: unix socket paths < 108 bytes
    const qemu = qemuProvider({ dataDir, image, log, bootTimeoutMs: BOOT_TIMEOUT_MS });
    pool = new WarmPool(qemu, { size: 1, machines: LAB_MACHINES, log });
    stack = await startStack({ provider: () => pool, idleMs: IDLE_MS });
    const started = Date.now();
    pool.start();
    await pool.settled();
    console.log(`warm pool filled (3 VMs, cold) in ${((Date.now() - started) / 1000).toFixed(1)} s`);
    expect(pool.status()).toMatchObject({ ready: 1, lastError: undefined });
  }, IMAGE_BUILD_TIMEOUT_MS + FILL_TIMEOUT_MS);

  afterAll(async () => {
    await pool?.stop().catch(() => undefined);
    await stack?.stop();
    if (dataDir) await fs.rm(dataDir, { recursive: true, force: true });
  }, 120_000);

  it("hands a learner a booted set: every machine answers SSH at once with its pinned host key", async () => {
    const started = Date.now();
    sessionId = await stack.startSession("learner-warm");
    const handOutMs = Date.now() - started;
    const machines = await stack.db.machine.findMany({ where: { sessionId }, orderBy: { name: "asc" } });
    for (const m of machines) {
      // The stored private key is encrypted at rest; the endpoint is what SSH gets.
      const endpoint = (await machineEndpoint(stack.db, sessionId, m.name))!;
      expect(m.privateKey).not.toContain("PRIVATE KEY");
      const client = await connectSsh(endpoint, READY_LOGIN_TIMEOUT_MS);
      const hostname = await new Promise<string>((resolve, reject) => {
        client.exec("hostname", (error, stream) => {
          if (error) return reject(error);
          let out = "";
          stream.on("data", (d: Buffer) => (out += d.toString("utf8")));
          stream.on("close", () => resolve(out.trim()));
        });
      });
      client.end();
      expect(hostname).toBe(m.name);
    }
    console.log(`warm hand-out: session ready in ${handOutMs} ms, three SSH logins ${Date.now() - started - handOutMs} ms`);
    expect(pool.status().served).toEqual({ warm: 1, cold: 0 });
    // The set was booted under the pool's own provider session and keeps that handle.
    expect(machines.every((m) => m.providerRef.startsWith("pool-"))).toBe(true);
    expect(pool.status().filling).toBe(true); // the refill started behind the hand-out
    // The learner's machines run at normal priority; the spare set boots behind them at nice 10.
    const handedOut = machines[0]!.providerRef.split("/")[0]!;
    expect(await niceOfSession(handedOut)).toEqual([0, 0, 0]);
    const spare = (await fs.readdir(path.join(dataDir, "sessions"))).find((id) => id.startsWith("pool-") && id !== handedOut)!;
    await expect.poll(() => niceOfSession(spare), { timeout: 30_000 }).toEqual([10, 10, 10]);
  }, 60_000);

  it("reboot from inside node02: the open terminal re-attaches when SSH is back and the disk kept its state", async () => {
    const client = await TerminalTestClient.connect(stack.wsUrl, { token: stack.token(sessionId, "node02") });
    await client.waitFor((c) => statusStates(c).includes("connected"), 30_000, "connected");
    // `wr""itten` in the typed line, `written` only in the output.
    client.input("cat /proc/sys/kernel/random/boot_id; echo survived-42 > /root/keep && sync && echo wr''itten\r");
    await client.waitForText("written", 30_000);
    const bootBefore = /([0-9a-f]{8}-[0-9a-f-]{27})/.exec(client.text())![1];

    const before = client.messages.length;
    client.input("systemctl reboot\r");
    await client.waitFor(
      (c) => c.messages.slice(before).some((m) => m.type === "status" && m.state !== "connected"),
      60_000,
      "the terminal to notice the machine went away",
    );
    const down = Date.now();
    await client.waitFor(
      (c) => c.messages.slice(before).some((m) => m.type === "status" && m.state === "connected"),
      REBOOT_TIMEOUT_MS,
      "the terminal to re-attach after the reboot",
    );
    console.log(`node02 reboot: terminal re-attached ${((Date.now() - down) / 1000).toFixed(1)} s after it went away`);

    const mark = client.text().length;
    client.input("echo boot=$(cat /proc/sys/kernel/random/boot_id) keep=$(cat /root/keep) && echo do''ne\r");
    await client.waitFor((c) => c.text().slice(mark).includes("done"), 30_000, "commands after the reboot");
    const after = client.text().slice(mark);
    expect(after).toContain("keep=survived-42");
    const bootAfter = /boot=([0-9a-f-]{36})/.exec(after)![1];
    expect(bootAfter).not.toBe(bootBefore);
    // One socket the whole time, output contiguous by offset.
    expect(client.closed).toBeNull();
    expect(client.gaps).toEqual([]);
    await client.close();
  }, REBOOT_TIMEOUT_MS + 120_000);

  it("poweroff from inside node01: the terminal says it is stopped; starting it brings the terminal back", async () => {
    const client = await TerminalTestClient.connect(stack.wsUrl, { token: stack.token(sessionId, "node01") });
    await client.waitFor((c) => statusStates(c).includes("connected"), 30_000, "connected");
    const before = client.messages.length;
    client.input("systemctl poweroff\r");
    await client.waitFor(
      (c) => c.messages.slice(before).some((m) => m.type === "status" && m.state === "stopped"),
      120_000,
      "the terminal to say the machine is stopped",
    );
    const started = Date.now();
    expect(await restartMachine(stack.db, pool, sessionId, "node01")).toBe(true);
    // It went from "stopped" to "connected" (possibly before the start call returned).
    await client.waitFor((c) => statusStates(c).at(-1) === "connected", 120_000, "the terminal to re-attach after the start");
    console.log(`node01 powered on again and the terminal re-attached in ${((Date.now() - started) / 1000).toFixed(1)} s`);
    expect(client.closed).toBeNull();
    await client.close();
  }, 300_000);

  it("an idle session is suspended (VMs off, terminals told why) and resumed with its disks on the next start", async () => {
    const client = await TerminalTestClient.connect(stack.wsUrl, { token: stack.token(sessionId, "controlplane") });
    await client.waitFor((c) => statusStates(c).includes("connected"), 30_000, "connected");
    client.input("echo idle-but-kept > /root/idle && sync && echo sy''nced\r");
    await client.waitForText("synced", 30_000);

    const suspendStarted = Date.now();
    const report = await stack.sweeper.sweep(new Date(Date.now() + IDLE_MS + 60_000));
    console.log(`suspend (ACPI shutdown of 3 VMs): ${((Date.now() - suspendStarted) / 1000).toFixed(1)} s`);
    expect(report.suspended).toEqual([sessionId]);
    const closed = await client.waitForClose(10_000);
    expect(closed.code).toBe(CloseCode.sessionOver);
    expect(closed.reason).toBe("suspended");
    const machines = await stack.db.machine.findMany({ where: { sessionId } });
    expect((await pool.health!(sessionId, machines)).map((h) => h.state)).toEqual(["stopped", "stopped", "stopped"]);
    expect((await stack.db.labSession.findUniqueOrThrow({ where: { id: sessionId } })).state).toBe("suspended");

    const resumeStarted = Date.now();
    expect(await stack.startSession("learner-warm")).toBe(sessionId); // the same session, resumed
    console.log(`resume (3 VMs powered on to SSH): ${((Date.now() - resumeStarted) / 1000).toFixed(1)} s`);
    const again = await TerminalTestClient.connect(stack.wsUrl, { token: stack.token(sessionId, "controlplane") });
    await again.waitFor((c) => statusStates(c).includes("connected"), 60_000, "connected after resume");
    again.input("cat /root/idle\r");
    await again.waitForText("idle-but-kept\r\n", 30_000);
    await again.close();
  }, 900_000);

  it("refills the pool to its size behind the hand-out", async () => {
    await pool.settled();
    expect(pool.status()).toMatchObject({ ready: 1, lastError: undefined });
  }, FILL_TIMEOUT_MS);

  it("ending the session and stopping the pool leave no process, socket or disk", async () => {
    await endSession(stack.db, pool, sessionId);
    await pool.stop();
    expect(await processesUnder(dataDir)).toEqual([]);
    expect(await fs.readdir(path.join(dataDir, "sessions")).catch(() => [])).toEqual([]);
  }, 120_000);
});
