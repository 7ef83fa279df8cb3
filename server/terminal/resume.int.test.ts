/**
 * Browsers resume through the machine's terminal holder across server processes, against real
 * sshd hosts (netns) with the real holder, real PostgreSQL and real gateway processes
 * (server/testing/gateway-process.ts, one OS process each):
 *  - kill -9 of the server process mid-stream, a new one started: the same client is back in the
 *    same shell, every one of 30,000 numbered lines arrives once at contiguous offsets, and input
 *    typed during the outage runs once;
 *  - two processes on one database: a writer through one, a read-only watcher through the other
 *    see the same bytes in order;
 *  - a watcher that stops reading while output floods: the learner keeps getting output and its
 *    echo, memory stays bounded, and the watcher then gets a snapshot of the screen.
 * Run under the shared lock: flock /tmp/labdeck-test.lock npx vitest run server/terminal/resume.int.test.ts
 */
import type { ChildProcess } from "node:child_process";
import { readFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort, startTestStack, type TestStack } from "../testing/stack";
import { kill9, spawnGateway, type GatewayProcess } from "../testing/spawn-gateway";
import { ResumingTestClient } from "../testing/terminal-client";

const SUBNET = 83; // 10.213.83.0/24

let stack: TestStack;
const children = new Set<ChildProcess>();

/** Starts a gateway process on `port`, tracked for afterAll; resolves once it listens. */
async function startGateway(port: number): Promise<GatewayProcess> {
  const gateway = await spawnGateway({ databaseUrl: stack.databaseUrl, secret: stack.secret, port });
  children.add(gateway.child);
  gateway.child.once("exit", () => children.delete(gateway.child));
  return gateway;
}

function rssMiB(pid: number): number {
  const line = readFileSync(`/proc/${pid}/status`, "utf8").match(/^VmRSS:\s+(\d+) kB/m);
  return Number(line![1]) / 1024;
}

const url = (port: number) => () => `ws://127.0.0.1:${port}/ws/terminal`;
const PROMPT = /[#$] $/;

beforeAll(async () => {
  stack = await startTestStack({ subnet: SUBNET });
}, 120_000);

afterAll(async () => {
  for (const child of children) child.kill("SIGKILL");
  await stack?.stop();
});

describe("resume through the terminal holder across server processes (real sshd + holder)", () => {
  it("kill -9 of the server mid-stream: same shell, 30,000 lines exactly once, outage input applied once", async () => {
    const sid = await stack.startSession("learner-resume");
    const port = await freePort();
    let gateway = await startGateway(port);
    const client = new ResumingTestClient(url(port), stack.token(sid, "controlplane"));
    client.start();
    await client.waitFor((c) => PROMPT.test(c.text()), 20_000, "prompt");
    client.input("RESUME_VAR=kept$((40+2))\r");
    // Echo off while streaming, so the tty does not echo the outage input into the numbered lines.
    client.input(
      'stty -echo; for i in $(seq 1 30000); do echo "L$i"; (( i % 1000 == 0 )) && sleep 0.1; done; stty echo; echo STREAM-$((6*7))\r',
    );
    await client.waitFor((c) => c.text().includes("L2000\r\n"), 20_000, "the stream to be under way");

    await kill9(gateway);
    const startOffset = client.offset;
    // Typed while no server runs, in three messages: each must be applied exactly once.
    client.input("echo TYP");
    client.input("ED-$((40+2))");
    client.input("\r");
    gateway = await startGateway(port);
    await client.waitFor((c) => c.isReady && c.pendingInputs === 0, 20_000, "reconnect and the outage input acknowledged");
    const resumedMs = performance.now() - gateway.listeningAt;
    await client.waitFor((c) => /^TYPED-42\r?$/m.test(c.text()), 60_000, "the outage input's output");
    client.input('echo "VAR=$RESUME_VAR"\r');
    await client.waitFor((c) => c.text().includes("VAR=kept42"), 20_000, "the shell variable");
    console.log(
      `resume after kill -9: ${resumedMs.toFixed(0)} ms from listening to the outage input acknowledged; resumed at offset ${startOffset}`,
    );

    const text = client.text();
    const numbers = [...text.matchAll(/^L(\d+)\r$/gm)].map((m) => Number(m[1]));
    expect(numbers.length).toBe(30_000);
    expect(numbers.every((n, i) => n === i + 1)).toBe(true);
    expect(text.match(/^TYPED-42\r?$/gm)).toHaveLength(1);
    expect(text.match(/^STREAM-42\r?$/gm)).toHaveLength(1);
    expect(client.gaps).toEqual([]);
    expect(client.snapshots).toEqual([]);
    expect(client.resets).toEqual([]);
    expect(client.connects).toBeGreaterThan(1);
    client.stop();
    gateway.child.kill("SIGTERM");
  }, 180_000);

  it("two server processes on one database: a writer through one and a watcher through the other see the same bytes", async () => {
    const sid = await stack.startSession("learner-two");
    const [a, b] = await Promise.all([freePort().then(startGateway), freePort().then(startGateway)]);
    const learner = new ResumingTestClient(url(a.port), stack.token(sid, "node01"));
    learner.start();
    await learner.waitFor((c) => PROMPT.test(c.text()), 20_000, "prompt");
    const watcher = new ResumingTestClient(url(b.port), stack.token(sid, "node01", "read", "instructor"));
    watcher.start();
    await watcher.waitFor((c) => c.isReady, 20_000, "watcher ready");
    const from = Math.max(learner.offset, watcher.offset);
    await new Promise((r) => setTimeout(r, 200));
    learner.input("seq 1 20000 | sed 's/^/B/'; echo END-$((2+3))\r");
    await learner.waitFor((c) => /^END-5\r$/m.test(c.text()), 30_000, "learner: end");
    await watcher.waitFor((c) => /^END-5\r$/m.test(c.text()), 30_000, "watcher: end");
    // The prompt after END-5 may have reached one of them and not yet the other: both must come
    // to the same end (they never did when a byte went missing).
    for (const deadline = Date.now() + 5_000; learner.offset !== watcher.offset && Date.now() < deadline;)
      await new Promise((r) => setTimeout(r, 20));
    const tail = (c: ResumingTestClient) => {
      const bytes = Buffer.concat(c.chunks);
      return bytes.subarray(bytes.length - (c.offset - from)).toString("utf8");
    };
    expect(learner.offset).toBe(watcher.offset);
    expect(tail(watcher)).toBe(tail(learner));
    expect(tail(watcher).match(/^B\d+\r$/gm)).toHaveLength(20_000);
    expect([learner.gaps, watcher.gaps]).toEqual([[], []]);
    learner.stop();
    watcher.stop();
    a.child.kill("SIGTERM");
    b.child.kill("SIGTERM");
  }, 120_000);

  it("a watcher that stops reading for 60 s during a flood: the learner goes on, memory stays bounded, the watcher gets a snapshot", async () => {
    const sid = await stack.startSession("learner-flood");
    const gateway = await startGateway(await freePort());
    const learner = new ResumingTestClient(url(gateway.port), stack.token(sid, "node02"), { keepBytes: 4 * 2 ** 20 });
    learner.start();
    await learner.waitFor((c) => PROMPT.test(c.text()), 20_000, "prompt");
    const watcher = new ResumingTestClient(url(gateway.port), stack.token(sid, "node02", "read", "instructor"));
    watcher.start();
    await watcher.waitFor((c) => c.isReady && PROMPT.test(c.text()), 20_000, "watcher ready");
    const rssBefore = rssMiB(gateway.child.pid!);
    watcher.pause();
    const pausedAt = Date.now();
    learner.input("timeout 60 yes FLOODFLOODFLOODFLOODFLOOD; echo FLOOD-$((1+1))\r");
    await learner.waitFor((c) => c.offset > 8 * 1024 * 1024, 30_000, "8 MiB of flood");
    // Typed during the flood: the tty echoes it at once, in the learner's stream (or, when the
    // learner's reader fell behind the holder's log and skipped to its tail, in a snapshot).
    const snapshotsBefore = learner.snapshots.length;
    const echo = learner.watch("Z");
    const floodEnded = learner.watch("FLOOD-2");
    learner.input("Z");
    await learner.waitFor(() => echo.seen(), 20_000, "the learner's echo during the flood");
    console.log(`flood: echo seen after ${learner.snapshots.length - snapshotsBefore} snapshot(s) of the learner's own reader`);
    let rssPeak = rssBefore;
    const floodEnd = Date.now() + 120_000;
    const progress: string[] = []; // the learner's MiB every 5 s
    let nextMark = Date.now();
    let lastOffset = learner.offset;
    let movedAt = Date.now();
    let longestStill = 0; // ms the learner's stream stood still, at most, while the flood ran
    while (!floodEnded.seen() && Date.now() < floodEnd) {
      rssPeak = Math.max(rssPeak, rssMiB(gateway.child.pid!));
      if (Date.now() >= nextMark) {
        progress.push((learner.offset / 2 ** 20).toFixed(0));
        nextMark += 5_000;
      }
      await learner.waitFor(() => floodEnded.seen(), 500, "flood end").catch(() => undefined);
      if (learner.offset !== lastOffset) {
        lastOffset = learner.offset;
        movedAt = Date.now();
      }
      longestStill = Math.max(longestStill, Date.now() - movedAt);
    }
    console.log(`flood: learner MiB every 5 s: ${progress.join(" ")}; longest still ${longestStill} ms`);
    // The holder once left a reader's backlog unsent while its PTY was throttled: 30-100 s still.
    expect(longestStill).toBeLessThan(15_000);
    expect(floodEnded.seen()).toBe(true);
    const holderPid = stack.hosts.hosts.find((h) => h.name === "node02")!.holderPid!;
    const holderRss = rssMiB(holderPid);
    console.log(
      `flood: learner snapshots ${learner.snapshots.length}; learner got ${(learner.offset / 2 ** 20).toFixed(0)} MiB; gateway RSS ${rssBefore.toFixed(0)} -> peak ${rssPeak.toFixed(0)} MiB; holder RSS ${holderRss.toFixed(0)} MiB`,
    );
    expect(rssPeak - rssBefore).toBeLessThan(150);
    expect(holderRss).toBeLessThan(100);
    const after = learner.watch("AFTER-7");
    learner.input("\recho AFTER-$((3+4))\r");
    expect(Date.now() - pausedAt).toBeGreaterThanOrEqual(60_000); // the watcher read nothing for a minute
    watcher.resume();
    await watcher.waitFor(
      (c) => c.snapshots.length > 0 && /AFTER-7/.test(c.tail(4096) + c.snapshots.at(-1)!.data),
      30_000,
      "the watcher's snapshot",
    );
    await learner.waitFor(() => after.seen(), 10_000, "learner after");
    expect(watcher.offset).toBeLessThanOrEqual(learner.offset);
    expect(watcher.gaps).toEqual([]);
    learner.stop();
    watcher.stop();
    gateway.child.kill("SIGTERM");
  }, 240_000);
});
