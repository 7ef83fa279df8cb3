/**
 * The grader against real sshd hosts and a real PostgreSQL: polling passes a step once its state
 * is true, failing output is recorded, hung checks are killed at their timeout, an unreachable
 * machine does not hold up other sessions (a step passes while its check hangs), progress only
 * moves forward. How soon a step unlocks is bench/grader.ts's to measure.
 */
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Progress } from "./progress";
import { startTestStack, type TestStack } from "../testing/stack";

let stack: TestStack;
let labsDir: string;
/** A TCP server that accepts and never speaks: SSH to it hangs until the handshake times out. */
let blackHole: net.Server;
const held: net.Socket[] = [];

function writeLab(dir: string) {
  const put = (file: string, content: string, mode = 0o644) => {
    const full = path.join(dir, "grader-test", file);
    fs.mkdirSync(path.dirname(full), { recursive: true });
    fs.writeFileSync(full, content, { mode });
  };
  put(
    "lab.yaml",
    [
      "title: grader test",
      "summary: steps for the grader's own tests",
      "durationMinutes: 5",
      "steps:",
      "  - { id: make-flag, title: make a flag, machine: node01, timeoutSeconds: 5 }",
      "  - { id: hangs, title: a check that hangs, machine: node02, timeoutSeconds: 2 }",
      "setup:",
      "  node01: [setup/node01.sh]",
    ].join("\n"),
  );
  put("lesson.md", "# test\n");
  put("setup/node01.sh", "#!/bin/bash\nrm -f /root/grader-flag\necho setup-ran > /root/setup-marker\n", 0o755);
  put("steps/make-flag/step.md", "make /root/grader-flag\n");
  put("steps/make-flag/hint.md", "touch it\n");
  put("steps/make-flag/check.sh", '#!/bin/bash\n[ -f /root/grader-flag ] || { echo "フラグがまだありません"; exit 1; }\necho ok\n', 0o755);
  put("steps/make-flag/solution.sh", "#!/bin/bash\ntouch /root/grader-flag\n", 0o755);
  put("steps/hangs/step.md", "wait\n");
  put("steps/hangs/hint.md", "wait\n");
  put("steps/hangs/check.sh", "#!/bin/bash\necho started; sleep 60.4242\n", 0o755); // a unique argv: the hosts share this machine's process table
  put("steps/hangs/solution.sh", "#!/bin/bash\ntrue\n", 0o755);
}

/**
 * The stuck session's lab: the same step with a long timeout, so that its check on a machine that
 * never answers hangs until the SSH ready timeout (SSH_READY_TIMEOUT_MS, 15 s) while the healthy
 * session is graded.
 */
function writeStuckLab(dir: string) {
  const put = (file: string, content: string, mode = 0o644) => {
    const full = path.join(dir, "grader-stuck-test", file);
    fs.mkdirSync(path.dirname(full), { recursive: true });
    fs.writeFileSync(full, content, { mode });
  };
  put(
    "lab.yaml",
    [
      "title: grader stuck test",
      "summary: a check on a machine that never answers",
      "durationMinutes: 5",
      "steps:",
      "  - { id: make-flag, title: make a flag, machine: node01, timeoutSeconds: 30 }",
    ].join("\n"),
  );
  put("lesson.md", "# test\n");
  put("steps/make-flag/step.md", "make /root/grader-flag\n");
  put("steps/make-flag/hint.md", "touch it\n");
  put("steps/make-flag/check.sh", "#!/bin/bash\n[ -f /root/grader-flag ]\n", 0o755);
  put("steps/make-flag/solution.sh", "#!/bin/bash\ntouch /root/grader-flag\n", 0o755);
}

/** A lab whose one step is verifyByReboot (reboot-proof.ts), then a plain one. */
function writeRebootLab(dir: string) {
  const put = (file: string, content: string, mode = 0o644) => {
    const full = path.join(dir, "reboot-proof-test", file);
    fs.mkdirSync(path.dirname(full), { recursive: true });
    fs.writeFileSync(full, content, { mode });
  };
  put(
    "lab.yaml",
    [
      "title: reboot proof test",
      "summary: a step that must survive a reboot",
      "durationMinutes: 5",
      "steps:",
      "  - { id: durable, title: a durable flag, machine: node01, timeoutSeconds: 5, verifyByReboot: true }",
      "  - { id: after, title: the next step, machine: node01, timeoutSeconds: 5 }",
      "setup:",
      "  node01: [setup/node01.sh]",
    ].join("\n"),
  );
  put("lesson.md", "# test\n");
  put("setup/node01.sh", "#!/bin/bash\nrm -f /root/durable-flag\n", 0o755);
  for (const id of ["durable", "after"]) {
    put(`steps/${id}/step.md`, "do it\n");
    put(`steps/${id}/hint.md`, "hint\n");
    put(`steps/${id}/solution.sh`, "#!/bin/bash\ntouch /root/durable-flag\n", 0o755);
  }
  put(
    "steps/durable/check.sh",
    '#!/bin/bash\n[ -f /root/durable-flag ] || { echo "フラグがありません"; exit 1; }\necho durable-ok\n',
    0o755,
  );
  put("steps/after/check.sh", "#!/bin/bash\nfalse\n", 0o755);
}

async function exec(machine: string, command: string) {
  const host = stack.hosts.hosts.find((h) => h.name === machine)!;
  const result = await stack.pool.run({ ...host, privateKey: host.privateKey }, command, 10);
  expect(result.outcome).toBe("pass");
  return result.output;
}

/** Runs the grader has recorded for a session (history rows count their runs). */
async function runsOf(sessionId: string): Promise<number> {
  return (await stack.db.checkRun.aggregate({ where: { sessionId }, _sum: { count: true } }))._sum.count ?? 0;
}

/** Whether a check of the session runs now (its claim is held: claims.ts). */
async function checking(sessionId: string): Promise<boolean> {
  return (await stack.db.labSession.findUniqueOrThrow({ where: { id: sessionId } })).checkUntil !== null;
}

function waitForProgress(sessionId: string, predicate: (p: Progress) => boolean, timeoutMs: number): Promise<Progress> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      off();
      reject(new Error(`no matching progress within ${timeoutMs} ms`));
    }, timeoutMs);
    const off = stack.bus.onProgress(sessionId, (p) => {
      if (!predicate(p)) return;
      clearTimeout(timer);
      off();
      resolve(p);
    });
  });
}

beforeAll(async () => {
  labsDir = fs.mkdtempSync(path.join(os.tmpdir(), "labdeck-grader-labs-"));
  writeLab(labsDir);
  writeStuckLab(labsDir);
  writeRebootLab(labsDir);
  stack = await startTestStack({ subnet: 44, labsDir, grader: { intervalMs: 500 } });
  blackHole = net.createServer((socket) => held.push(socket));
  await new Promise<void>((resolve) => blackHole.listen(0, "127.0.0.1", resolve));
}, 120_000);

afterAll(async () => {
  stack?.grader.stop();
  for (const s of held) s.destroy();
  blackHole?.close();
  await stack?.stop();
  fs.rmSync(labsDir, { recursive: true, force: true });
});

describe("grader over real sshd", () => {
  let sessionId: string;

  it("runs the lab's setup when a session starts", async () => {
    await exec("node01", "touch /root/grader-flag");
    sessionId = await stack.startSession("grader-learner", "grader-test");
    expect(await exec("node01", "cat /root/setup-marker; ls /root/grader-flag 2>&1 || true")).toMatch(/setup-ran[\s\S]*No such file/);
  });

  it("records a failing check with its output, reachable through progress", async () => {
    const progress = await stack.grader.checkNow(sessionId);
    expect(progress.currentStepId).toBe("make-flag");
    expect(progress.lastCheck).toMatchObject({ stepId: "make-flag", outcome: "fail", output: "フラグがまだありません" });
    expect(progress.steps.map((s) => s.state)).toEqual(["current", "locked"]);
    const runs = await stack.db.checkRun.findMany({ where: { sessionId } });
    expect(runs).toHaveLength(1);
    expect(runs[0]).toMatchObject({ trigger: "manual", outcome: "fail", exitCode: 1, machine: "node01" });
  });

  it("passes a step by polling while an unreachable session's check hangs, unlocking the next", async () => {
    // A second session whose node01 never answers SSH: it must not stall the first.
    const stuck = await stack.startSession("grader-stuck", "test-lab-without-steps");
    await stack.db.labSession.update({ where: { id: stuck }, data: { labSlug: "grader-stuck-test" } });
    const port = (blackHole.address() as net.AddressInfo).port;
    await stack.db.machine.updateMany({ where: { sessionId: stuck, name: "node01" }, data: { host: "127.0.0.1", port } });

    stack.grader.start();
    // The stuck session's first check is running, hanging on the silent machine.
    await expect.poll(() => checking(stuck), { timeout: 15_000 }).toBe(true);
    const passed = waitForProgress(sessionId, (p) => p.steps[0]?.state === "done", 30_000);
    await exec("node01", "touch /root/grader-flag");
    const progress = await passed;
    // Passed while that check still hung: the stuck session has not recorded a run yet.
    expect(await runsOf(stuck)).toBe(0);
    expect(await checking(stuck)).toBe(true);
    expect(progress.currentStepId).toBe("hangs");
    expect(progress.steps.map((s) => s.state)).toEqual(["done", "current"]);
    const completion = await stack.db.stepCompletion.findMany({ where: { sessionId } });
    expect(completion.map((c) => c.stepId)).toEqual(["make-flag"]);
    // By a poll: the only Check pressed was the failing one before the grader started.
    expect(await stack.db.checkRun.findMany({ where: { sessionId, outcome: "pass" }, select: { trigger: true } })).toEqual([
      { trigger: "poll" },
    ]);
  });

  it("moves forward only: undoing the work does not re-lock a done step", async () => {
    await exec("node01", "rm -f /root/grader-flag");
    // The grader has polled the session again since the undo.
    const before = await runsOf(sessionId);
    await expect.poll(() => runsOf(sessionId), { timeout: 30_000 }).toBeGreaterThan(before);
    const progress = await stack.grader.progress(sessionId);
    expect(progress.steps[0]!.state).toBe("done");
  });

  it("reports the unreachable machine's runs as unreachable and backs off", async () => {
    const stuck = await stack.db.labSession.findFirstOrThrow({ where: { learnerId: "grader-stuck" } });
    // Its check gives up at the SSH ready timeout (SSH_READY_TIMEOUT_MS, 15 s; connecting counts against the step's 30 s).
    await expect.poll(() => runsOf(stuck.id), { timeout: 60_000, interval: 250 }).toBeGreaterThan(0);
    stack.grader.stop();
    const runs = await stack.db.checkRun.findMany({ where: { sessionId: stuck.id } });
    expect(runs.length).toBeGreaterThanOrEqual(1);
    expect(runs.every((r) => r.outcome === "unreachable")).toBe(true);
    // Far fewer runs than the healthy session's, which was polled every 500 ms meanwhile (history
    // rows count their runs).
    const stuckRuns = runs.reduce((n, r) => n + r.count, 0);
    expect(stuckRuns).toBeLessThan(await runsOf(sessionId));
  });

  it("kills a hung check at its timeout and reports it", async () => {
    // The poller is stopped (previous test); its last background run of this step has ended.
    await expect.poll(() => checking(sessionId), { timeout: 30_000 }).toBe(false);
    const progress = await stack.grader.checkNow(sessionId);
    expect(progress.lastCheck!.stepId).toBe("hangs");
    expect(progress.lastCheck!.outcome).toBe("timeout");
    expect(progress.lastCheck!.output).toContain("started");
    // It ran its whole 2 s (a timeout never fires early) ...
    expect(progress.lastCheck!.durationMs).toBeGreaterThanOrEqual(1_900);
    // ... and was killed then, not left to end by itself a minute later: the remote process is gone.
    expect(await exec("node02", "pgrep -f 'sleep 60[.]4242' | wc -l")).toBe("0");
  });

  it("keeps progress across a grader restart (it lives in the database)", async () => {
    const { Grader } = await import("./grader");
    const fresh = new Grader({ db: stack.db, labs: stack.labs, pool: stack.pool, bus: stack.bus, log: (await import("../log")).log });
    const progress = await fresh.progress(sessionId);
    expect(progress.steps.map((s) => s.state)).toEqual(["done", "current"]);
  });
});

/**
 * Reboot proof over real sshd. The netns hosts cannot reboot. A hostile learner who is root can
 * bind-mount files over /proc/sys/kernel/random/boot_id and /proc/uptime: the test does exactly
 * that, and neither one nor both may count (the boot facts line reports them covered). A real new
 * boot is faked at the far edge instead: the session's record says it passed on another boot
 * before this machine's own boot began.
 */
describe("reboot proof of a verifyByReboot step (netns hosts: mounts over the boot files, an earlier boot in the record)", () => {
  let sessionId: string;
  const state = (p: Progress) => p.steps.map((s) => s.state);
  const fakeBoot = async (bootId: string, uptime?: string) => {
    await exec(
      "node01",
      `umount /proc/sys/kernel/random/boot_id 2>/dev/null; umount /proc/uptime 2>/dev/null; echo ${bootId} > /root/fake-boot-id; mount --bind /root/fake-boot-id /proc/sys/kernel/random/boot_id; true`,
    );
    if (uptime) await exec("node01", `echo '${uptime} 1.00' > /root/fake-uptime; mount --bind /root/fake-uptime /proc/uptime`);
  };
  const unfake = () => exec("node01", "umount /proc/sys/kernel/random/boot_id 2>/dev/null; umount /proc/uptime 2>/dev/null; true");

  afterAll(async () => {
    await exec(
      "node01",
      "umount /proc/sys/kernel/random/boot_id 2>/dev/null; umount /proc/uptime 2>/dev/null; rm -f /root/durable-flag; true",
    ).catch(() => undefined);
  });

  it("a first pass is 'passed now' (proving), not done; the check's boot facts line is not in the learner's output", async () => {
    sessionId = await stack.startSession("reboot-learner", "reboot-proof-test");
    expect(state(await stack.grader.checkNow(sessionId))).toEqual(["current", "locked"]);
    await exec("node01", "touch /root/durable-flag");
    const p = await stack.grader.checkNow(sessionId);
    expect(state(p)).toEqual(["proving", "locked"]);
    expect(p.currentStepId).toBe("durable");
    expect(p.rebootProof).toMatchObject({ stepId: "durable", machine: "node01" });
    expect(p.lastCheck).toMatchObject({ outcome: "pass", output: "durable-ok" });
    const row = await stack.db.labSession.findUniqueOrThrow({ where: { id: sessionId } });
    expect(row.proofBootId).toBe(fs.readFileSync("/proc/sys/kernel/random/boot_id", "utf8").trim());
    expect(await stack.db.stepCompletion.count({ where: { sessionId } })).toBe(0);
  });

  it("passing again on the same boot keeps it proving", async () => {
    expect(state(await stack.grader.checkNow(sessionId))).toEqual(["proving", "locked"]);
  });

  it("a new boot id on a machine that has been up all along (a bind-mounted boot_id) is no reboot", async () => {
    await fakeBoot("11111111-2222-4333-8444-555555555555");
    expect(state(await stack.grader.checkNow(sessionId))).toEqual(["proving", "locked"]);
  });

  it("a new boot id and a short uptime, both bind-mounted, are no reboot either", async () => {
    await fakeBoot("66666666-7777-4888-8999-aaaaaaaaaaaa", "3.50");
    expect(state(await stack.grader.checkNow(sessionId))).toEqual(["proving", "locked"]);
  });

  it("a fail clears 'passed now': the fix must pass again, on boot files nothing covers, before a reboot counts", async () => {
    await exec("node01", "rm -f /root/durable-flag");
    const p = await stack.grader.checkNow(sessionId);
    expect(state(p)).toEqual(["current", "locked"]);
    expect(p.rebootProof).toBeNull();
    await exec("node01", "touch /root/durable-flag");
    // Passes, but with its boot files covered it is not even "passed now".
    expect(state(await stack.grader.checkNow(sessionId))).toEqual(["current", "locked"]);
    await unfake();
    expect(state(await stack.grader.checkNow(sessionId))).toEqual(["proving", "locked"]);
    expect((await stack.db.labSession.findUniqueOrThrow({ where: { id: sessionId } })).proofBootId).toBe(
      fs.readFileSync("/proc/sys/kernel/random/boot_id", "utf8").trim(),
    );
  });

  it("a pass on a new boot (the record's boot id is another, passed before this boot began) completes the step", async () => {
    const uptimeSeconds = Number(fs.readFileSync("/proc/uptime", "utf8").split(" ")[0]);
    await stack.db.labSession.update({
      where: { id: sessionId },
      data: { proofBootId: "11111111-2222-4333-8444-555555555555", proofPassedAt: new Date(Date.now() - (uptimeSeconds + 120) * 1000) },
    });
    const p = await stack.grader.checkNow(sessionId);
    expect(state(p)).toEqual(["done", "current"]);
    expect(p.rebootProof).toBeNull();
    const row = await stack.db.labSession.findUniqueOrThrow({ where: { id: sessionId } });
    expect(row).toMatchObject({ currentStepId: "after", proofStepId: null, proofBootId: null, proofPassedAt: null });
    expect((await stack.db.stepCompletion.findMany({ where: { sessionId } })).map((c) => c.stepId)).toEqual(["durable"]);
  });
});
