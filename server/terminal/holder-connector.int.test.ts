/**
 * Terminal over the holder connector against real sshd hosts (netns) with a real holder:
 * the shell outlives the Terminal that opened it (a server process going away), a lab
 * session's end hangs it up, and a machine without a holder falls back to the direct PTY visibly.
 * Run under the shared lock: flock /tmp/labdeck-test.lock npx vitest run server/terminal/holder-connector.int.test.ts
 */
import { terminalNoticeText } from "../i18n/locale";
import type { TerminalNotice } from "./protocol";
import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { execFile } from "node:child_process";
import { randomUUID } from "node:crypto";
import headlessPkg from "@xterm/headless";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createNetnsHosts, holderDaemonPid, type NetnsHost, type NetnsHostSet } from "../testing/netns-hosts";
import type { MachineState, SessionOverReason } from "./protocol";
import { Terminal, type Viewer } from "./terminal";
import { connectSsh, type SshEndpoint } from "../ssh/connect";
import { connectHolder } from "../holder/client";
import { SshExecPool } from "../ssh/exec";
import { HolderConnector, holderTerminalId } from "./holder-connector";
import { holderFile } from "../holder/install";
import { dbEpochStore, type EpochStore } from "./epochs";
import type { Db } from "../db/client";
import { castOutput } from "../testing/cast";
import { startTestDb } from "../testing/test-db";
import { castText, loadCast } from "../recordings/asciicast";
import { TerminalRecorder } from "../recordings/recorder";
import type { RecordingTap } from "./recording-tap";

const SUBNET = 66; // 10.213.66.0/24: a host with a holder
const BARE_SUBNET = 67; // a host without one

let dir: string;
let db: Db;
let stopDb: () => Promise<void>;
let set: NetnsHostSet;
let bare: NetnsHostSet;
const terminals: Terminal[] = [];

function endpoint(h: NetnsHost): SshEndpoint {
  return { name: h.name, host: h.host, port: h.port, user: h.user, privateKey: h.privateKey, hostKey: h.hostKey };
}

/** A viewer (the learner's, or a read-only watcher's) that keeps everything it is sent. */
class TextViewer implements Viewer {
  constructor(readonly mode: "write" | "read" = "write") {}
  chunks: Buffer[] = [];
  /** Output offsets as sent: [offset, length]. */
  spans: [number, number][] = [];
  snapshots = 0;
  states: MachineState[] = [];
  ended: SessionOverReason[] = [];
  sendOutput(offset: number, chunk: Uint8Array): boolean {
    this.chunks.push(Buffer.from(chunk));
    this.spans.push([offset, chunk.byteLength]);
    return true;
  }
  sendReset(): void {}
  sendSnapshot(): void {
    this.snapshots++;
  }
  sendNotice(notice: TerminalNotice): void {
    // Shown on the screen like output (outside the offsets), worded as a page in Japanese words it.
    this.chunks.push(Buffer.from(terminalNoticeText("ja", notice, "machine")));
  }
  sendAck(): void {}
  sendSize(): void {}
  sendStatus(state: MachineState): void {
    this.states.push(state);
  }
  end(reason: SessionOverReason): void {
    this.ended.push(reason);
  }
  text(): string {
    return Buffer.concat(this.chunks).toString("utf8");
  }
  async waitForText(needle: string, timeoutMs = 20_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!this.text().includes(needle)) {
      if (Date.now() > deadline) throw new Error(`no ${JSON.stringify(needle)} in ${JSON.stringify(this.text().slice(-300))}`);
      await new Promise((r) => setTimeout(r, 10));
    }
  }
}

/**
 * Watches a terminal on the holder (a read-only look: spawns nothing); the returned promise,
 * given once the watch is open, resolves when the holder says its shell ended. Open it before
 * the shell is ended: a read-only open of a shell that already ended hears nothing.
 */
async function watchShellEnd(h: NetnsHost, id: string): Promise<{ ended: Promise<void> }> {
  const ssh = await connectSsh(endpoint(h));
  const link = await connectHolder(ssh);
  const opened = new Promise<void>((resolve) => link.on("opened", (o) => o.id === id && resolve()));
  const exit = new Promise<void>((resolve) => link.on("exit", (e) => e.id === id && resolve()));
  link.open(id, -1, { cols: 80, rows: 24 }, "read");
  await opened;
  const ended = Promise.race([
    exit,
    new Promise<void>((_, reject) => setTimeout(() => reject(new Error(`shell ${id} still running after 10 s`)), 10_000)),
  ]).finally(() => {
    link.close();
    ssh.end();
  });
  return { ended };
}

function open(
  h: NetnsHost,
  sessionId: string,
  recording?: RecordingTap,
  options: { epochs?: EpochStore; offset?: number; holderRetryMs?: readonly number[] } = {},
): { terminal: Terminal; viewer: TextViewer } {
  const terminal = new Terminal(
    new HolderConnector(endpoint(h), holderTerminalId(sessionId), {
      recording,
      epochs: options.epochs,
      holderRetryMs: options.holderRetryMs,
    }),
  );
  terminals.push(terminal);
  const viewer = new TextViewer();
  terminal.attach(viewer, options.offset ?? 0, { cols: 100, rows: 30 });
  return { terminal, viewer };
}

/**
 * The holder dies and another instance starts in the host's namespaces: what a reboot does to
 * the holder's log (it starts at 0 again), on the same boot id.
 */
async function restartHolder(host: NetnsHost): Promise<void> {
  await killHolder(host);
  await startHolder(host);
}

/**
 * The holder dies (SIGKILL), its keeper first (else it would start a new daemon with the same
 * shells): no holder answers on the host until startHolder.
 */
async function killHolder(host: NetnsHost): Promise<void> {
  process.kill(host.keeperPid!, "SIGKILL");
  process.kill(host.holderPid!, "SIGKILL");
  await fs.rm(holderPidFile(host), { force: true });
}

/** The pid file the set's destroy() finds the holder by. */
function holderPidFile(host: NetnsHost): string {
  return path.join(dir, "hc", host.namespace, "holder.pid");
}

/** Starts a holder in the host's namespaces (after killHolder). */
async function startHolder(host: NetnsHost): Promise<void> {
  const pidFile = holderPidFile(host);
  // Its output away from our pipes (execFile would wait for the detached holder to close them).
  await promisify(execFile)("nsenter", [
    "-t",
    String(host.pid),
    "-m",
    "-u",
    "-n",
    "--",
    "sh",
    "-c",
    'setsid -f /usr/bin/python3 "$0" --pid-file "$1" </dev/null >/dev/null 2>&1',
    holderFile(),
    pidFile,
  ]);
  await expect.poll(async () => (await fs.readFile(pidFile, "utf8").catch(() => "")).trim() !== "", { timeout: 10_000 }).toBe(true);
  host.keeperPid = Number((await fs.readFile(pidFile, "utf8")).trim());
  host.holderPid = await holderDaemonPid(host.keeperPid);
}

/**
 * What a reboot does to the holder: it dies with its shells, and one starts under a new boot id
 * (a file bound over /proc/sys/kernel/random/boot_id in the host's own, private, mount namespace).
 */
async function rebootHolder(host: NetnsHost): Promise<void> {
  await killHolder(host);
  const bootIdFile = path.join(dir, `boot_id-${randomUUID()}`);
  await fs.writeFile(bootIdFile, `${randomUUID()}\n`);
  await promisify(execFile)("nsenter", [
    "-t",
    String(host.pid),
    "-m",
    "--",
    "mount",
    "--bind",
    bootIdFile,
    "/proc/sys/kernel/random/boot_id",
  ]);
  await startHolder(host);
}

/** The lines a terminal shows after `text` (xterm's headless emulator, 200 columns): what a screen or a replay shows. */
async function screenLines(text: string): Promise<string[]> {
  const term = new headlessPkg.Terminal({ cols: 200, rows: 50, scrollback: 5_000, allowProposedApi: true });
  await new Promise<void>((resolve) => term.write(text, resolve));
  const buffer = term.buffer.active;
  const lines = Array.from({ length: buffer.length }, (_, i) => (buffer.getLine(i)?.translateToString(true) ?? "").trimEnd());
  term.dispose();
  return lines;
}

/** Types `command` every 500 ms until `needle` shows: a fresh shell comes up some time after a holder restart. */
async function typeUntilShown(t: { terminal: Terminal; viewer: TextViewer }, command: string, needle: string): Promise<void> {
  await expect
    .poll(
      async () => {
        t.terminal.input(t.viewer, command);
        await new Promise((r) => setTimeout(r, 500));
        return t.viewer.text().includes(needle);
      },
      { timeout: 30_000, interval: 500 },
    )
    .toBe(true);
}

/** The end of the last output span a viewer was sent (its offset), checking that the spans follow each other without a gap. */
function contiguousEnd(viewer: TextViewer, from: number): number {
  let at = from;
  for (const [offset, length] of viewer.spans) {
    expect(offset).toBe(at);
    at = offset + length;
  }
  return at;
}

beforeAll(async () => {
  dir = await fs.mkdtemp(path.join(os.tmpdir(), "labdeck-connector-"));
  ({ db, stop: stopDb } = await startTestDb());
  [set, bare] = await Promise.all([
    createNetnsHosts({ id: "hc", names: ["node01"], subnet: SUBNET, dir: path.join(dir, "hc") }),
    createNetnsHosts({ id: "hn", names: ["node02"], subnet: BARE_SUBNET, dir: path.join(dir, "hn"), holder: false }),
  ]);
}, 60_000);

afterAll(async () => {
  for (const s of terminals) s.close();
  await Promise.all([set?.destroy(), bare?.destroy()]);
  await stopDb?.();
  await fs.rm(dir, { recursive: true, force: true });
});

describe("holder connector", () => {
  it("keeps the shell when the Terminal holding it goes away; a new one repaints recent output and continues", async () => {
    const host = set.hosts[0]!;
    const first = open(host, "lab-session-1");
    first.terminal.input(first.viewer, "X=1; echo first-$((6*7))\r");
    await first.viewer.waitForText("first-42\r\n");
    first.terminal.close(); // shutdown: no reason, the shell stays on the holder

    const second = open(host, "lab-session-1");
    await second.viewer.waitForText("first-42\r\n"); // the tail of the log, repainted
    second.terminal.input(second.viewer, "echo X-is-$X\r");
    await second.viewer.waitForText("X-is-1\r\n");
    expect(second.viewer.text()).not.toContain("端末ホルダーがない");

    // Another lab session on the same machine has its own shell.
    const other = open(host, "lab-session-2");
    other.terminal.input(other.viewer, "echo other-${X:-unset}\r");
    await other.viewer.waitForText("other-unset\r\n");
    other.terminal.close("learner");

    // The lab session ends: its shell is hung up; the next Terminal gets a fresh shell.
    const watch = await watchShellEnd(host, holderTerminalId("lab-session-1"));
    second.terminal.close("learner");
    await watch.ended;
    const third = open(host, "lab-session-1");
    third.terminal.input(third.viewer, "echo after-end-${X:-unset}\r");
    await third.viewer.waitForText("after-end-unset\r\n");
    third.terminal.close("learner");
  }, 60_000);

  it("a holder that restarts (as at a reboot) gives a fresh shell, and viewers' offsets keep rising without a gap or snapshot; the recording keeps the new shell's output", async () => {
    const host = set.hosts[0]!;
    const labSession = await db.labSession.create({ data: { labSlug: "restart", learnerId: "restart-learner", provider: "static" } });
    const recorder = new TerminalRecorder(db, { maxSessionBytes: 64 * 1024 * 1024, retentionDays: 1 });
    const { terminal, viewer } = open(host, "lab-session-4", recorder.tap(labSession.id, "node01"));
    terminal.input(viewer, "Y=7; seq 1 200; echo before-$((6*7))\r");
    await viewer.waitForText("before-42\r\n");
    await restartHolder(host);
    await typeUntilShown({ terminal, viewer }, "echo after-${Y:-unset}-$((6*7))\r", "after-unset-42");
    expect(viewer.snapshots).toBe(0);
    for (let i = 1; i < viewer.spans.length; i++) expect(viewer.spans[i]![0]).toBe(viewer.spans[i - 1]![0] + viewer.spans[i - 1]![1]);
    terminal.close("learner");
    // The new holder's offsets start at 0 again on the same boot: the recording must not take the
    // fresh shell's output for bytes it already has (it did, and dropped it, when keyed by boot id).
    await recorder.flushAll();
    const recorded = castOutput(castText((await loadCast(db, labSession.id, "node01", []))!));
    expect(recorded).toContain("before-42");
    expect(recorded).toContain("after-unset-42");
  }, 60_000);

  it("a reboot: the learner and a watcher are shown the reboot line, and the recording replays it with the new shell's prompt on a line of its own", async () => {
    const host = set.hosts[0]!;
    const labSession = await db.labSession.create({ data: { labSlug: "reboot", learnerId: "reboot-learner", provider: "static" } });
    const recorder = new TerminalRecorder(db, { maxSessionBytes: 64 * 1024 * 1024, retentionDays: 1 });
    // What is tested is the reboot line: on a loaded host the holder's restart may outlast the
    // default 7.5 s of tries before the direct shell, so this terminal tries longer.
    const { terminal, viewer } = open(host, "lab-session-reboot", recorder.tap(labSession.id, "node01"), {
      holderRetryMs: [500, 1_000, 2_000, 4_000, 8_000, 16_000],
    });
    const watcher = new TextViewer("read");
    terminal.attach(watcher, 0);
    // Typed once the shell has prompted (input typed before that is echoed ahead of its prompt).
    await expect.poll(() => /[#$] $/.test(viewer.text()), { timeout: 20_000 }).toBe(true);
    terminal.input(viewer, "echo before-$((6*7))\r");
    await viewer.waitForText("before-42\r\n");
    await new Promise((r) => setTimeout(r, 300)); // the prompt after it
    const commandLine = (await screenLines(viewer.text())).find((line) => line.includes("echo before-"))!;
    const prompt = commandLine.slice(0, commandLine.indexOf("echo before-")).trim();
    expect(prompt.length).toBeGreaterThan(0);
    // The old shell's last prompt is on the screen when the machine goes down (as after `reboot`).
    expect((await screenLines(viewer.text())).filter((l) => l.trim() !== "").at(-1)).toBe(prompt);

    await rebootHolder(host);
    const shown = terminalNoticeText("ja", "rebooted", "machine");
    await viewer.waitForText(shown, 30_000);
    await watcher.waitForText(shown);
    // The fresh shell's prompt, then a command.
    await expect.poll(() => /[#$] $/.test(viewer.text().slice(viewer.text().indexOf(shown))), { timeout: 20_000 }).toBe(true);
    terminal.input(viewer, "echo after-$((6*7))\r");
    await viewer.waitForText("after-42\r\n");
    await new Promise((r) => setTimeout(r, 300));
    terminal.close("learner");
    await recorder.flushAll();

    const cast = (await loadCast(db, labSession.id, "node01", []))!;
    const recorded = castOutput(castText(cast));
    const line = terminalNoticeText("ja", "rebooted", "node01");
    expect(recorded).toContain(line);
    expect(recorded.split(line).length - 1).toBe(1);
    expect(cast.events.filter((e) => e[1] === "m").map((e) => e[2])).toContain("rebooted");
    // Replayed: the old prompt, the reboot line, and the new shell's prompt on a line of its own.
    const lines = (await screenLines(recorded)).filter((l) => l.trim() !== "");
    const at = lines.findIndex((l) => l.includes("[node01 が再起動されました。新しいシェルです]"));
    expect(lines[at - 1]).toBe(prompt);
    const next = lines.slice(at + 1).find((l) => !l.startsWith("[node01 ")); // after the notice lines (a reconnect's too)
    expect(next?.startsWith(`${prompt} echo after-`)).toBe(true);
    for (const l of lines) expect(l.split(prompt).length - 1, l).toBeLessThanOrEqual(1);
  }, 90_000);

  it("a deploy after the holder restarted: the next process resumes the viewer in the new shell at its offset (epochs shared in PostgreSQL), no snapshot, no gap", async () => {
    const host = set.hosts[0]!;
    const labSession = await db.labSession.create({ data: { labSlug: "epochs", learnerId: "epochs-learner", provider: "static" } });
    const epochs = () => dbEpochStore(db, labSession.id, host.name);
    const a = open(host, labSession.id, undefined, { epochs: epochs() });
    a.terminal.input(a.viewer, "echo one-$((6*7))\r");
    await a.viewer.waitForText("one-42\r\n");
    await restartHolder(host); // seen by process A: the fresh shell's log follows the old one
    await typeUntilShown(a, "Q=9; echo two-$((6*7))\r", "two-42");
    const offset = contiguousEnd(a.viewer, 0);
    expect(offset).toBeGreaterThan(0);
    a.terminal.close(); // the deploy: the shell stays

    // Process B, which never saw the old holder: without the shared base, it took the viewer's
    // offset for one in the new log (beyond its end), and the viewer got a snapshot.
    const b = open(host, labSession.id, undefined, { epochs: epochs(), offset });
    b.terminal.input(b.viewer, "echo three-$Q-$((6*7))\r");
    await b.viewer.waitForText("three-9-42\r\n");
    expect(b.viewer.snapshots).toBe(0);
    contiguousEnd(b.viewer, offset);
    expect(b.viewer.text()).not.toContain("two-42"); // nothing the viewer had comes again
    b.terminal.close("learner");
  }, 90_000);

  it("a holder restarted while no process was attached: the next process starts the new log at the recorded end and the viewer goes on in the fresh shell without a snapshot", async () => {
    const host = set.hosts[0]!;
    const labSession = await db.labSession.create({ data: { labSlug: "epochs-late", learnerId: "epochs-learner", provider: "static" } });
    const epochs = () => dbEpochStore(db, labSession.id, host.name);
    const a = open(host, labSession.id, undefined, { epochs: epochs() });
    a.terminal.input(a.viewer, "R=3; echo before-$((6*7))\r");
    await a.viewer.waitForText("before-42\r\n");
    await new Promise((r) => setTimeout(r, 300));
    const offset = contiguousEnd(a.viewer, 0);
    a.terminal.close(); // leaves the log: its end is recorded
    await expect.poll(async () => [...(await epochs().load()).values()][0]?.endLogOffset, { timeout: 5_000 }).toBe(offset);
    await restartHolder(host); // no process attached

    const b = open(host, labSession.id, undefined, { epochs: epochs(), offset });
    await typeUntilShown(b, "echo after-${R:-unset}-$((6*7))\r", "after-unset-42");
    expect(b.viewer.snapshots).toBe(0);
    contiguousEnd(b.viewer, offset);
    const known = [...(await epochs().load()).values()].sort((x, y) => x.startOffset - y.startOffset);
    expect(known.map((e) => e.startOffset)).toEqual([0, offset]);
    b.terminal.close("learner");
  }, 90_000);

  it("records what the shell printed while no process read it: the next process catches the recording up from the holder's log, every line once and in order", async () => {
    const host = set.hosts[0]!;
    const labSession = await db.labSession.create({ data: { labSlug: "gap", learnerId: "gap-learner", provider: "static" } });
    const first = new TerminalRecorder(db, { maxSessionBytes: 64 * 1024 * 1024, retentionDays: 1 });
    const a = open(host, "lab-session-gap", first.tap(labSession.id, "node01"));
    a.terminal.input(a.viewer, "echo gap-$((6*7))\r");
    await a.viewer.waitForText("gap-42\r\n");
    // 60,000 lines (~350 KB, beyond the 256 KiB a new process repaints from) printed after this
    // process has gone (a deploy), read by the holder at its unwatched rate meanwhile.
    a.terminal.input(a.viewer, "sleep 1; seq 1 60000; echo GAP-$((6*7))-END\r");
    await new Promise((r) => setTimeout(r, 300));
    a.terminal.close(); // shutdown: the shell stays
    await first.flushAll();
    await new Promise((r) => setTimeout(r, 5_000));

    const second = new TerminalRecorder(db, { maxSessionBytes: 64 * 1024 * 1024, retentionDays: 1 });
    const b = open(host, "lab-session-gap", second.tap(labSession.id, "node01"));
    await b.viewer.waitForText("GAP-42-END\r\n", 30_000);
    expect(b.viewer.text()).not.toContain("\n1\r\n2\r\n3\r\n"); // the viewer got the tail only
    b.terminal.input(b.viewer, "echo after-gap-$((6*7))\r");
    await b.viewer.waitForText("after-gap-42\r\n");
    await expect
      .poll(
        async () => {
          await second.flushAll();
          return castOutput(castText((await loadCast(db, labSession.id, "node01", []))!)).includes("after-gap-42\r\n");
        },
        { timeout: 10_000, interval: 250 },
      )
      .toBe(true);
    const recorded = castOutput(castText((await loadCast(db, labSession.id, "node01", []))!));
    const lines = recorded.split(/[\r\n]+/); // bash ends bracketed paste with "\x1b[?2004l\r" right before the first line
    const from = lines.indexOf("1");
    expect(from, "the first line of the gap is recorded").toBeGreaterThan(0);
    const numbers = lines.slice(from, from + 60_000);
    expect(
      numbers.every((line, i) => line === String(i + 1)),
      "lines 1..60000, each once, in order",
    ).toBe(true);
    expect(lines[from + 60_000]).toBe("GAP-42-END");
    expect(recorded.split("GAP-42-END").length - 1).toBe(1);
    b.terminal.close("learner");
  }, 90_000);

  it("a root learner who cuts the holder's log cannot stall the recording: the catch-up gives up on the lost bytes and live output goes on being recorded", async () => {
    const host = set.hosts[0]!;
    const labSession = await db.labSession.create({ data: { labSlug: "cut", learnerId: "cut-learner", provider: "static" } });
    const recorder = new TerminalRecorder(db, { maxSessionBytes: 64 * 1024 * 1024, retentionDays: 1 });
    const a = open(host, "lab-session-cut", recorder.tap(labSession.id, "node01"));
    a.terminal.input(a.viewer, "echo cut-$((6*7))\r");
    await a.viewer.waitForText("cut-42\r\n");
    a.terminal.close();
    await recorder.flushAll();
    // 6 MB the recording never saw (a process without a recorder read it): the oldest of it is on
    // disk only, and the learner, root on the machine, truncates the holder's segment files.
    const unrecorded = open(host, "lab-session-cut");
    unrecorded.terminal.input(unrecorded.viewer, "head -c 6000000 /dev/zero | tr '\\0' y; echo; echo CUT-$((3+4))\r");
    await unrecorded.viewer.waitForText("CUT-7\r\n", 60_000);
    unrecorded.terminal.close();
    const ssh = await connectSsh(endpoint(host));
    await new Promise<void>((resolve, reject) =>
      ssh.exec(
        `for f in /var/lib/labdeck-holder/${holderTerminalId("lab-session-cut")}/*.seg; do truncate -s 1000 "$f"; done`,
        (error, channel) => {
          if (error) return reject(error);
          channel.on("close", () => resolve()).resume();
          channel.stderr.resume();
        },
      ),
    );
    ssh.end();

    const b = open(host, "lab-session-cut", recorder.tap(labSession.id, "node01"));
    await b.viewer.waitForText("CUT-7\r\n");
    b.terminal.input(b.viewer, "echo after-cut-$((6*7))\r");
    await b.viewer.waitForText("after-cut-42\r\n");
    await expect
      .poll(
        async () => {
          await recorder.flushAll();
          return castOutput(castText((await loadCast(db, labSession.id, "node01", []))!)).includes("after-cut-42\r\n");
        },
        { timeout: 15_000, interval: 250 },
      )
      .toBe(true);
    const recorded = castOutput(castText((await loadCast(db, labSession.id, "node01", []))!));
    expect(recorded).toContain("cut-42\r\n");
    expect(recorded.split("after-cut-42\r\n").length - 1).toBe(1);
    b.terminal.close("learner");
  }, 120_000);

  it("waits for a holder that is down for a moment (a machine just restored or booted) instead of falling back", async () => {
    const host = set.hosts[0]!;
    await killHolder(host);
    const t = open(host, "lab-session-holder-late");
    await new Promise((r) => setTimeout(r, 1_500)); // the holder is down while the terminal first tries it
    await startHolder(host);
    // The shell's parent is the holder (a direct shell's would be sshd), and no fallback line came.
    t.terminal.input(t.viewer, 'echo "parent=$(cat /proc/$PPID/comm)"\r');
    await t.viewer.waitForText("parent=python3\r\n");
    expect(t.viewer.text()).not.toContain("端末ホルダーがない");
    t.terminal.close("learner");
  }, 60_000);

  it("takes the login a restore's fix-up left for it (SshExecPool.handOff): one SSH connection, not two; a login is taken once", async () => {
    const host = set.hosts[0]!;
    const e = endpoint(host);
    /** This process's established SSH connections to the host, by local address (the client side, in the root namespace). */
    const connections = async () =>
      new Set(
        (await promisify(execFile)("ss", ["-Htn", "state", "established", "dst", `${host.host}:22`])).stdout
          .trim()
          .split("\n")
          .filter(Boolean)
          .map((line) => line.trim().split(/\s+/).at(-2)!),
      );
    const before = await connections();
    const pool = new SshExecPool();
    try {
      expect((await pool.run(e, "echo fixed-up", 30)).outcome).toBe("pass");
      // The fix-up's login: one connection none of the earlier tests made (theirs may be closing).
      const fixUp = [...(await connections())].filter((c) => !before.has(c));
      expect(fixUp).toHaveLength(1);
      pool.handOff(e, 20_000);
      let taken = 0;
      const terminal = new Terminal(
        new HolderConnector(e, holderTerminalId("lab-session-handoff"), { takeConnection: (x) => (taken++, pool.take(x)) }),
      );
      terminals.push(terminal);
      const viewer = new TextViewer();
      terminal.attach(viewer, 0, { cols: 100, rows: 30 });
      await typeUntilShown({ terminal, viewer }, 'echo "parent=$(cat /proc/$PPID/comm)"\r', "parent=python3\r\n");
      expect(taken).toBe(1);
      // The terminal runs over that connection: it is still there, and no connection was added.
      const after = await connections();
      expect(after.has(fixUp[0]!)).toBe(true);
      expect([...after].filter((c) => !before.has(c))).toEqual(fixUp);
      expect(pool.take(e)).toBeUndefined();
      terminal.close("learner");
    } finally {
      pool.closeAll();
    }
  }, 60_000);

  it("leaves the direct shell for the holder once the holder answers again, saying so", async () => {
    const host = set.hosts[0]!;
    await killHolder(host);
    const terminal = new Terminal(
      new HolderConnector(endpoint(host), holderTerminalId("lab-session-holder-back"), { holderRetryMs: [], holderProbeMs: 500 }),
    );
    terminals.push(terminal);
    const viewer = new TextViewer();
    terminal.attach(viewer, 0, { cols: 100, rows: 30 });
    await viewer.waitForText("端末ホルダーがないため直接接続しています");
    terminal.input(viewer, 'echo "before=$(cat /proc/$PPID/comm)"\r');
    await viewer.waitForText("before=sshd\r\n");
    await startHolder(host);
    await viewer.waitForText("端末ホルダーにつながるようになりました");
    await typeUntilShown({ terminal, viewer }, 'echo "after=$(cat /proc/$PPID/comm)"\r', "after=python3\r\n");
    terminal.close("learner");
  }, 60_000);

  it("falls back to the direct PTY with a visible line on a machine without a holder", async () => {
    const { terminal, viewer } = open(bare.hosts[0]!, "lab-session-3");
    await viewer.waitForText("端末ホルダーがないため直接接続しています");
    terminal.input(viewer, "hostname; echo direct-$((6*7))\r");
    await viewer.waitForText("direct-42\r\n");
    expect(viewer.text()).toContain("node02\r\n");
    expect(viewer.states).toContain("connected");
    terminal.close("learner");
  });
});
