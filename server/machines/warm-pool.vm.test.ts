/**
 * The warm pool in front of the QEMU provider, with real VMs (TCG here), the real gateway and a
 * real database: a learner of preinstall-checks gets a set the pool prepared for that lab (booted,
 * the lab's setup run, its state saved: SSH answers at once, nothing left to run), each machine
 * with its own identity; the pool prepares the next behind the hand-out; a reset of one machine
 * restores the lab's start from the saved state, keeping identity and pin, the others untouched;
 * a reboot from inside a VM keeps the learner's open terminal (it re-attaches when SSH is back),
 * the disk, the machine's identity and its QEMU process; a poweroff from inside is noticed and
 * undone with the disk and eth1 intact; a suspend saves the machines' state and the resume
 * continues the learner's very shells; ending everything leaves no process or disk. (The
 * provider-level reboot and poweroff tests live here, with the terminal, rather than twice: each
 * costs a TCG boot.)
 */
import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { endSession, machineEndpoint, resetMachine, restartMachine } from "../sessions/lab-sessions";
import { poolPreparer } from "../compose/machines";
import { SshExecPool } from "../ssh/exec";
import { CloseCode } from "../terminal/protocol";
import { connectSsh } from "../ssh/connect";
import { LAB_MACHINES, startStack, type Stack } from "../testing/stack";
import { TerminalTestClient } from "../testing/terminal-client";
import { processArgv } from "./qemu/processes";
import { qemuProvider, type QemuProvider } from "./qemu/provider";
import { readTemplate, templatesDir } from "./qemu/templates";
import { IMAGE_BUILD_TIMEOUT_MS, testImage } from "./qemu/test-image";
import type { MachineProvider } from "./provider";
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

/** The lab whose sets the pool prepares (its setup plants a swap file, a sysctl file and an agent on controlplane). */
const LAB = "preinstall-checks";

/** Idle time of the stack's sweeper; sweeps are called with a clock past it. */
const IDLE_MS = 60_000;

const log = pino({ level: "warn" }, pino.destination(2));

let dataDir: string;
let qemu: QemuProvider;
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

/** The QEMU processes started for one VM directory. */
async function qemuPidsUnder(vmDir: string): Promise<number[]> {
  const pids: number[] = [];
  for (const pid of await processesUnder(vmDir)) if ((await processArgv(pid))?.[0]?.includes("qemu-system")) pids.push(pid);
  return pids;
}

/** Niceness of every QEMU process of a machine set, from /proc/<pid>/stat (field 19). */
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

/** Runs a command over an exec channel; its stdout, trimmed. */
async function sshRun(client: Awaited<ReturnType<typeof connectSsh>>, command: string): Promise<string> {
  return new Promise<string>((resolve, reject) => {
    client.exec(command, (error, stream) => {
      if (error) return reject(error);
      let out = "";
      stream.on("data", (d: Buffer) => (out += d.toString("utf8")));
      stream.stderr.resume();
      stream.on("close", () => resolve(out.trim()));
    });
  });
}

function statusStates(client: TerminalTestClient): string[] {
  return client.messages.flatMap((m) => (m.type === "status" ? [m.state] : []));
}

/** No generic set: one set prepared for the lab (the stack's database and labs exist once it started). */
function labPool(provider: QemuProvider): WarmPool {
  const exec = new SshExecPool();
  return new WarmPool(provider, {
    size: 0,
    machines: LAB_MACHINES,
    log,
    labs: {
      targets: async () => [{ labSlug: LAB, machines: LAB_MACHINES, reserve: 1, initial: 1 }],
      preparer: {
        version: (slug) => poolPreparer(stack.db, stack.labs, exec, provider).version(slug),
        prepare: (slug, m) => poolPreparer(stack.db, stack.labs, exec, provider).prepare(slug, m),
      },
    },
  });
}

/** Whatever `pool` is now: the stack keeps one provider for its life, the tests restart the pool. */
function currentPool(): MachineProvider {
  return new Proxy({} as MachineProvider, {
    get: (_target, key) => {
      const value: unknown = Reflect.get(pool, key);
      return typeof value === "function" ? (value as (...args: unknown[]) => unknown).bind(pool) : value;
    },
    has: (_target, key) => Reflect.has(pool, key),
  });
}

/**
 * What the next platform process does at start (compose/machines.ts): a new provider on the data
 * directory adopts the sets of live sessions and the spares, and a new pool offers the spares.
 */
async function nextProcess(live: string): Promise<{ spares: string[] | undefined }> {
  qemu = qemuProvider({ dataDir, image: await testImage(), log, bootTimeoutMs: BOOT_TIMEOUT_MS });
  const report = await qemu.adoptOrCleanup({ keep: (id) => id === live });
  pool = labPool(qemu);
  pool.start();
  await pool.settled();
  return { spares: report.spares };
}

describe("warm pool over the QEMU provider (real VMs)", () => {
  beforeAll(async () => {
    const image = await testImage();
    dataDir = await fs.mkdtemp(path.join(os.tmpdir(), "ldp-")); // short: unix socket paths < 108 bytes
    qemu = qemuProvider({ dataDir, image, log, bootTimeoutMs: BOOT_TIMEOUT_MS });
    pool = labPool(qemu);
    // The stack asks for its provider once; a restart below replaces the pool behind it.
    stack = await startStack({ provider: () => currentPool(), idleMs: IDLE_MS });
    const started = Date.now();
    pool.start();
    for (const deadline = Date.now() + FILL_TIMEOUT_MS; pool.status().labs?.[0]?.ready !== 1;) {
      if (Date.now() > deadline) throw new Error(`no prepared set within ${FILL_TIMEOUT_MS} ms: ${pool.status().lastError}`);
      await new Promise((r) => setTimeout(r, 1_000));
    }
    console.log(`warm pool prepared a ${LAB} set (3 VMs boot + setup + saved state) in ${((Date.now() - started) / 1000).toFixed(1)} s`);
    expect(pool.status()).toMatchObject({ ready: 1, lastError: undefined });
  }, IMAGE_BUILD_TIMEOUT_MS + FILL_TIMEOUT_MS);

  afterAll(async () => {
    await pool?.stop({ destroySpares: true }).catch(() => undefined); // waits for a set being made
    await stack?.stop();
    if (dataDir) await fs.rm(dataDir, { recursive: true, force: true });
  }, FILL_TIMEOUT_MS);

  it(
    "hands a learner of the lab a prepared set: every machine answers at once with its own pinned key, hostname, eth1 and machine-id; the lab's setup is done",
    async () => {
      const started = Date.now();
      sessionId = await stack.startSession("learner-warm", LAB);
      const handOutMs = Date.now() - started;
      expect((await stack.db.labSession.findUniqueOrThrow({ where: { id: sessionId } })).startSource).toBe("prepared");
      const machines = await stack.db.machine.findMany({ where: { sessionId }, orderBy: { name: "asc" } });
      const facts = new Map<string, string>();
      for (const m of machines) {
        // The stored private key is encrypted at rest; the endpoint is what SSH gets.
        const endpoint = (await machineEndpoint(stack.db, sessionId, m.name))!;
        expect(m.privateKey).not.toContain("PRIVATE KEY");
        const client = await connectSsh(endpoint, READY_LOGIN_TIMEOUT_MS);
        facts.set(
          m.name,
          await sshRun(
            client,
            "echo host=$(hostname) id=$(cat /etc/machine-id) eth1=$(ip -4 -o addr show dev eth1 | awk '{print $4}') swap=$(swapon --show=NAME --noheadings) agent=$(systemctl is-active legacy-metrics-agent) sysctl=$(cat /etc/sysctl.d/zz-hardening.conf 2>/dev/null | grep -c ip_forward)",
          ),
        );
        client.end();
      }
      console.log(`prepared hand-out: session ready in ${handOutMs} ms, three SSH logins ${Date.now() - started - handOutMs} ms`);
      expect(facts.get("controlplane")).toMatch(
        /^host=controlplane id=[0-9a-f]{32} eth1=192\.168\.56\.10\/24 swap=\/swapfile agent=active sysctl=1$/,
      );
      expect(facts.get("node01")).toMatch(/^host=node01 id=[0-9a-f]{32} eth1=192\.168\.56\.11\/24 swap= agent=inactive sysctl=0$/);
      expect(facts.get("node02")).toMatch(/^host=node02 id=[0-9a-f]{32} eth1=192\.168\.56\.12\/24 /);
      const ids = [...facts.values()].map((f) => /id=([0-9a-f]+)/.exec(f)![1]);
      expect(new Set(ids).size).toBe(3);
      expect(new Set(machines.map((m) => m.hostKey)).size).toBe(3);
      expect(pool.status().served).toMatchObject({ prepared: 1, warm: 0, cold: 0 });
      // The set was booted under the pool's own set id and keeps that handle.
      expect(machines.every((m) => m.providerRef.startsWith("pool-"))).toBe(true);
      // The next set is made behind the hand-out, once the learner's terminals had time to log in.
      expect(pool.status().filling).toBe(false);
      await expect.poll(() => pool.status().filling || pool.status().ready > 0, { timeout: 60_000 }).toBe(true);
      // The learner's machines run at normal priority; the spare set boots behind them at nice 10.
      const handedOut = machines[0]!.providerRef.split("/")[0]!;
      expect(await niceOfSession(handedOut)).toEqual([0, 0, 0]);
      const spare = (await fs.readdir(path.join(dataDir, "sessions"))).find((id) => id.startsWith("pool-") && id !== handedOut)!;
      await expect.poll(() => niceOfSession(spare), { timeout: 30_000 }).toEqual([10, 10, 10]);

      // Both sets started from the lab's one template (the first set, set up and saved): each
      // machine's pinned key is its own, not the template's.
      const [templateName] = await fs.readdir(templatesDir(dataDir));
      const template = (await readTemplate(path.join(templatesDir(dataDir), templateName!)))!;
      expect(template.labSlug).toBe(LAB);
      for (const m of machines) expect(m.hostKey).not.toBe(template.vms.find((v) => v.name === m.name)!.hostPublicKey);

      // The spare (restored from the same template, same addresses and MACs) is on a network of its own:
      // a page on its node01 is reached from its controlplane, not from the learner's.
      await expect.poll(() => pool.status().labs?.[0]?.ready, { timeout: FILL_TIMEOUT_MS, interval: 1_000 }).toBe(1);
      const spareSet = await qemu.machinesOf(spare);
      const spareNode01 = await connectSsh(
        spareSet.find((m) => m.name === "node01")!,
        READY_LOGIN_TIMEOUT_MS,
      );
      await sshRun(
        spareNode01,
        "mkdir -p /tmp/mark && echo spare-set > /tmp/mark/index.html && (setsid python3 -m http.server 8099 --directory /tmp/mark >/dev/null 2>&1 &) ; sleep 2",
      );
      const spareId = await sshRun(spareNode01, "cat /etc/machine-id");
      spareNode01.end();
      const fetchFrom = async (m: { host: string; port: number; user: string; privateKey: string; hostKey: string; name: string }) => {
        const c = await connectSsh(m, READY_LOGIN_TIMEOUT_MS);
        const out = await sshRun(c, "curl -s -m 5 http://192.168.56.11:8099/ || echo unreachable");
        c.end();
        return out;
      };
      expect(await fetchFrom(spareSet.find((m) => m.name === "controlplane")!)).toBe("spare-set");
      expect(await fetchFrom((await machineEndpoint(stack.db, sessionId, "controlplane"))!)).toBe("unreachable");
      expect(ids).not.toContain(spareId);
    },
    FILL_TIMEOUT_MS + 120_000,
  );

  it("reset of controlplane restores the lab's start from the saved state: identity and pin kept, setup not run again, the others untouched", async () => {
    const cpBefore = (await machineEndpoint(stack.db, sessionId, "controlplane"))!;
    const node02 = (await machineEndpoint(stack.db, sessionId, "node02"))!;
    const dirty = await connectSsh(cpBefore, READY_LOGIN_TIMEOUT_MS);
    await sshRun(dirty, "echo dirty > /root/dirty; swapoff -a; rm -f /etc/sysctl.d/zz-hardening.conf; sync");
    dirty.end();
    const other = await connectSsh(node02, READY_LOGIN_TIMEOUT_MS);
    await sshRun(other, "echo stays > /root/stays; sync");
    other.end();
    const terminal = await TerminalTestClient.connect(stack.wsUrl, { token: stack.token(sessionId, "controlplane") });
    await terminal.waitFor((c) => statusStates(c).includes("connected"), 30_000, "connected");

    let setupRan = false;
    const started = Date.now();
    expect(await resetMachine(stack.db, pool, sessionId, "controlplane", async () => void (setupRan = true))).toBe(true);
    const resetMs = Date.now() - started;
    void stack.terminals.reconnectMachine(sessionId, "controlplane"); // what the bus's `restored` notice does
    expect(setupRan).toBe(false);
    const cp = (await machineEndpoint(stack.db, sessionId, "controlplane"))!;
    expect(cp.hostKey).toBe(cpBefore.hostKey);
    const after = await connectSsh(cp, READY_LOGIN_TIMEOUT_MS); // pinned key: refused if it changed
    const state = await sshRun(
      after,
      "echo dirty=$(cat /root/dirty 2>/dev/null) swap=$(swapon --show=NAME --noheadings) sysctl=$(grep -c ip_forward /etc/sysctl.d/zz-hardening.conf) host=$(hostname) clock=$(date +%s)",
    );
    after.end();
    console.log(`reset of controlplane to the lab's start (saved state): ${resetMs} ms`);
    expect(state).toMatch(/^dirty= swap=\/swapfile sysctl=1 host=controlplane clock=\d+$/);
    // The guest's clock was stepped to the host's (it stood still in the saved state).
    expect(Math.abs(Number(/clock=(\d+)/.exec(state)![1]) - Date.now() / 1000)).toBeLessThan(10);
    const n2 = await connectSsh(node02, READY_LOGIN_TIMEOUT_MS);
    expect(await sshRun(n2, "cat /root/stays")).toBe("stays");
    n2.end();
    // The open terminal is back on the restored machine: a fresh shell that works.
    const mark = terminal.text().length;
    terminal.input("echo after-re''set\r");
    await terminal.waitFor((c) => c.text().slice(mark).includes("after-reset"), 60_000, "the terminal after the reset");
    await terminal.close();
  }, 180_000);

  it(
    "reboot from inside node02: the open terminal re-attaches when SSH is back and the disk kept its state",
    async () => {
      const client = await TerminalTestClient.connect(stack.wsUrl, { token: stack.token(sessionId, "node02") });
      await client.waitFor((c) => statusStates(c).includes("connected"), 30_000, "connected");
      // `wr""itten` in the typed line, `written` only in the output.
      client.input("cat /proc/sys/kernel/random/boot_id; echo survived-42 > /root/keep && sync && echo wr''itten\r");
      await client.waitForText("written", 30_000);
      const bootBefore = /([0-9a-f]{8}-[0-9a-f-]{27})/.exec(client.text())![1];
      const machines = await stack.db.machine.findMany({ where: { sessionId } });
      const vmDir = path.join(dataDir, "sessions", machines[0]!.providerRef.split("/")[0]!, "vm-node02");
      const qemuBefore = await qemuPidsUnder(vmDir);
      expect(qemuBefore).toHaveLength(1);

      // sshd restarted and every SSH login cut, the terminal's own too: the shell lives on in the
      // machine's terminal holder and the terminal attaches to it again.
      const cut = client.messages.length;
      client.input("export KEPT=ssh-$((6*7)); systemctl restart ssh; pkill -KILL -f 'sshd: root@'\r");
      await client.waitFor(
        (c) => c.messages.slice(cut).some((m) => m.type === "status" && m.state !== "connected"),
        60_000,
        "the cut connection",
      );
      await client.waitFor((c) => statusStates(c).at(-1) === "connected", 60_000, "the terminal back after the cut");
      const kept = client.text().length;
      client.input("echo kept=$KEPT\r");
      await client.waitFor((c) => c.text().slice(kept).includes("kept=ssh-42"), 30_000, "the same shell after sshd's restart");

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
      client.input(
        "echo boot=$(cat /proc/sys/kernel/random/boot_id) keep=$(cat /root/keep) host=$(hostname) eth1=$(ip -4 -o addr show dev eth1 | awk '{print $4}') var=${KEPT:-unset} && echo do''ne\r",
      );
      await client.waitFor((c) => c.text().slice(mark).includes("done"), 30_000, "commands after the reboot");
      const after = client.text().slice(mark);
      expect(after).toContain("keep=survived-42");
      // The same identity on the new boot, in the same QEMU process (a reboot, not a new VM).
      expect(after).toContain("host=node02 eth1=192.168.56.12/24 var=unset");
      // The terminal said the machine rebooted and went on in a fresh shell (the variable is gone).
      expect(client.messages.slice(before).some((m) => m.type === "notice" && m.text.includes("node02 が再起動されました"))).toBe(true);
      const bootAfter = /boot=([0-9a-f-]{36})/.exec(after)![1];
      expect(bootAfter).not.toBe(bootBefore);
      expect(await qemuPidsUnder(vmDir)).toEqual(qemuBefore);
      expect(
        (
          await pool.health!(
            sessionId,
            machines.filter((m) => m.name === "node02"),
          )
        )[0]!.state,
      ).toBe("running");
      // One socket the whole time, output contiguous by offset.
      expect(client.closed).toBeNull();
      expect(client.gaps).toEqual([]);
      await client.close();
    },
    REBOOT_TIMEOUT_MS + 120_000,
  );

  it("poweroff from inside node01: the terminal says it is stopped; starting it brings the terminal back", async () => {
    const client = await TerminalTestClient.connect(stack.wsUrl, { token: stack.token(sessionId, "node01") });
    await client.waitFor((c) => statusStates(c).includes("connected"), 30_000, "connected");
    client.input("echo kept-off > /root/off-marker && sync && echo sy''nced\r");
    await client.waitForText("synced", 30_000);
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
    // Its disk kept what was synced, and it is back on the session's eth1 network.
    const mark = client.text().length;
    client.input("echo marker=$(cat /root/off-marker) && echo do''ne\r");
    await client.waitFor((c) => c.text().slice(mark).includes("done"), 30_000, "commands after the power-on");
    expect(client.text().slice(mark)).toContain("marker=kept-off");
    await client.close();
    const cp = await TerminalTestClient.connect(stack.wsUrl, { token: stack.token(sessionId, "controlplane") });
    await cp.waitFor((c) => statusStates(c).includes("connected"), 30_000, "controlplane connected");
    cp.input("ping -c 1 -W 5 node01 >/dev/null && echo ping-o''k\r");
    await cp.waitForText("ping-ok", 30_000);
    await cp.close();
  }, 300_000);

  it("an idle session is suspended (VMs off, terminals told why) and resumed with its disks on the next start", async () => {
    const client = await TerminalTestClient.connect(stack.wsUrl, { token: stack.token(sessionId, "controlplane") });
    await client.waitFor((c) => statusStates(c).includes("connected"), 30_000, "connected");
    client.input("export KEPT_SHELL=shell-$((40+2)); echo idle-but-kept > /root/idle && echo sa''ved\r");
    await client.waitForText("saved", 30_000);

    const suspendStarted = Date.now();
    const report = await stack.sweeper.sweep(new Date(Date.now() + IDLE_MS + 60_000));
    console.log(`suspend (state of 3 VMs saved, QEMU ended): ${((Date.now() - suspendStarted) / 1000).toFixed(1)} s`);
    expect(report.suspended).toEqual([sessionId]);
    const closed = await client.waitForClose(10_000);
    expect(closed.code).toBe(CloseCode.sessionOver);
    expect(closed.reason).toBe("suspended");
    const machines = await stack.db.machine.findMany({ where: { sessionId } });
    expect((await pool.health!(sessionId, machines)).map((h) => h.state)).toEqual(["stopped", "stopped", "stopped"]);
    expect((await stack.db.labSession.findUniqueOrThrow({ where: { id: sessionId } })).state).toBe("suspended");

    const resumeStarted = Date.now();
    expect(await stack.startSession("learner-warm", LAB)).toBe(sessionId); // the same session, resumed
    console.log(`resume (3 VMs restored from their saved state to SSH): ${((Date.now() - resumeStarted) / 1000).toFixed(1)} s`);
    const again = await TerminalTestClient.connect(stack.wsUrl, { token: stack.token(sessionId, "controlplane") });
    await again.waitFor((c) => statusStates(c).includes("connected"), 60_000, "connected after resume");
    // The very shell of before the suspend (its variable), on the disk and clock of now.
    const mark = again.text().length;
    again.input("echo kept=$KEPT_SHELL file=$(cat /root/idle) clock=$(date +%s) && echo do''ne\r");
    await again.waitFor((c) => c.text().slice(mark).includes("done"), 30_000, "commands after the resume");
    const out = again.text().slice(mark);
    expect(out).toContain("kept=shell-42 file=idle-but-kept");
    expect(Math.abs(Number(/clock=(\d+)/.exec(out)![1]) - Date.now() / 1000)).toBeLessThan(10);
    expect((await stack.db.labSession.findUniqueOrThrow({ where: { id: sessionId } })).startSource).toBe("resume");
    await again.close();
  }, 900_000);

  it(
    "prepares the lab's next set behind the hand-out",
    async () => {
      await expect.poll(() => pool.status().labs?.[0]?.ready, { timeout: FILL_TIMEOUT_MS, interval: 1_000 }).toBe(1);
      expect(pool.status()).toMatchObject({ ready: 1, lastError: undefined });
    },
    FILL_TIMEOUT_MS,
  );

  it("a clean stop and a crash both keep the prepared set: the next process offers it again at once, booting nothing", async () => {
    const handedOut = (await stack.db.machine.findFirstOrThrow({ where: { sessionId } })).providerRef.split("/")[0]!;
    const spare = (await fs.readdir(path.join(dataDir, "sessions"))).find((id) => id.startsWith("pool-") && id !== handedOut)!;
    const vmsBefore = (await processesUnder(path.join(dataDir, "sessions"))).sort();

    await pool.stop(); // a clean stop (Ctrl-C)
    const afterStop = await nextProcess(handedOut);
    expect(afterStop.spares).toEqual([spare]);
    expect(pool.status()).toMatchObject({ ready: 1, filling: false, labs: [{ labSlug: LAB, ready: 1 }] });

    // A crash: the process is gone without a stop; the next one finds the same.
    const afterCrash = await nextProcess(handedOut);
    expect(afterCrash.spares).toEqual([spare]);
    expect(pool.status()).toMatchObject({ ready: 1, filling: false });
    // Not one VM was started or ended: the same QEMU and switch processes run.
    expect((await processesUnder(path.join(dataDir, "sessions"))).sort()).toEqual(vmsBefore);

    // And it is handed out as prepared, with nothing to run.
    const other = await stack.startSession("learner-after-restart", LAB);
    expect((await stack.db.labSession.findUniqueOrThrow({ where: { id: other } })).startSource).toBe("prepared");
    expect((await stack.db.machine.findFirstOrThrow({ where: { sessionId: other } })).providerRef.startsWith(`${spare}/`)).toBe(true);
    await endSession(stack.db, pool, other);
  }, 120_000);

  it("ending the session and stopping the pool leave no process, socket or disk", async () => {
    await endSession(stack.db, pool, sessionId);
    await pool.stop({ destroySpares: true });
    expect(await processesUnder(dataDir)).toEqual([]);
    expect(await fs.readdir(path.join(dataDir, "sessions")).catch(() => [])).toEqual([]);
  }, 120_000);
});
