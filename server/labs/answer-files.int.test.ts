/**
 * The preinstall lab's answer-file steps judged on a fake root, without VMs. who-fixes reads only
 * /root/who-fixes.txt, so every shortcut and alternative fixture of the step runs here the way
 * checks run (clean environment, checklib first): shortcuts must fail with the text they name,
 * alternatives and the solution must pass. record-before is judged against a planted swap
 * priority (the fstab line setup writes; this machine has no /swapfile in /proc/swaps, where the
 * check looks first) with nothing on port 10250 here: a
 * recording with this machine's priority passes, the hand-typed shortcuts fail. The same fixtures
 * run on real VMs in lab-test.vm.test.ts; this is the fast loop for parsing and wording.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { CHECK_LIB } from "./check-script";
import { runInFakeRoot } from "../testing/fake-root";
import { loadLab } from "./load";

const roots: string[] = [];
afterEach(() => {
  for (const r of roots.splice(0)) fs.rmSync(r, { recursive: true, force: true });
});

async function runCheckAfter(fixture: string, check: string, files: Record<string, string> = {}) {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), "answers-"));
  roots.push(root);
  fs.mkdirSync(path.join(root, "root"));
  for (const [file, content] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(root, file)), { recursive: true });
    fs.writeFileSync(path.join(root, file), content);
  }
  // The fixture runs in a subshell, as its own script would; then the check, as the grader runs it.
  return runInFakeRoot(`${CHECK_LIB}\n(\n${fixture}\n)\n${check}`, { root, writable: ["root"] });
}

describe("preinstall-checks who-fixes on a fake root", async () => {
  const lab = await loadLab(path.resolve("labs"), "preinstall-checks");
  const step = lab.steps.find((s) => s.id === "who-fixes")!;

  it("has shortcuts and alternatives", () => {
    expect(step.shortcuts.length).toBeGreaterThan(0);
    expect(step.alternatives.length).toBeGreaterThan(0);
  });

  for (const f of step.shortcuts) {
    it(`shortcut ${f.name} fails${f.expectOutput.length ? ` saying ${f.expectOutput.join(", ")}` : ""}, never naming a wrong key`, async () => {
      const run = await runCheckAfter(f.content, step.check.content);
      expect(run.code, run.stdout + run.stderr).toBe(1);
      for (const text of f.expectOutput) expect(run.stdout).toContain(text);
      expect(run.stdout).not.toMatch(/の答えを見直して/);
    });
  }

  for (const f of [...step.alternatives, { name: "solution", content: step.solution.content }]) {
    it(`${f.name} passes`, async () => {
      const run = await runCheckAfter(f.content, step.check.content);
      expect(run.stdout + run.stderr).toMatch(/^正解です/);
      expect(run.code).toBe(0);
    });
  }

  it("counts wrong answers without naming them, and reads a capitalised right answer as right", async () => {
    const run = await runCheckAfter("printf 'swap=Human\\nmodules=KUBESPRAY\\nsysctl-zz-override=human\\nport-10250=Kubespray\\n' >/root/who-fixes.txt", step.check.content);
    expect(run.stdout.trim()).toBe(
      "4 つのうち 2 つの答えが違います。レッスンの「kubespray が自動で処理するもの」「kubespray が手を出さないもの: ポート」「このラボのマシンに残されているもの」を読み直してください",
    );
  });
});

describe("preinstall-checks record-before on a fake root", async () => {
  const lab = await loadLab(path.resolve("labs"), "preinstall-checks");
  const step = lab.steps.find((s) => s.id === "record-before")!;
  const planted = { "etc/fstab": "UUID=abc / ext4 defaults 0 1\n/swapfile none swap sw,pri=417 0 0\n" };
  /** What the step's command prints on a machine whose setup chose priority 417 (ss's line as root sees it). */
  const recorded = [
    "NAME      TYPE SIZE USED PRIO",
    "/swapfile file 128M   0B  417",
    "/swapfile none swap sw,pri=417 0 0",
    "net.ipv4.ip_forward = 0",
    "State  Recv-Q Send-Q Local Address:Port  Peer Address:Port Process",
    'LISTEN 0      5            0.0.0.0:10250      0.0.0.0:*     users:(("python3",pid=612,fd=3))',
  ].join("\n");

  it("passes a recording with this machine's swap priority (also with CRLF line ends)", async () => {
    for (const text of [recorded, recorded.replace(/\n/g, "\r\n")]) {
      const run = await runCheckAfter("true", step.check.content, { ...planted, "root/before.txt": `${text}\n` });
      expect(run.stdout + run.stderr).toMatch(/スワップの優先度 417、10250 の PID 612/);
      expect(run.code).toBe(0);
    }
  });

  for (const f of step.shortcuts) {
    it(`shortcut ${f.name} fails`, async () => {
      const run = await runCheckAfter(f.content, step.check.content, planted);
      expect(run.code, run.stdout + run.stderr).toBe(1);
      for (const text of f.expectOutput) expect(run.stdout).toContain(text);
    });
  }

  it("refuses a recording made after the fix (ip_forward already 1) and one from another session (another priority)", async () => {
    const run = await runCheckAfter("true", step.check.content, { ...planted, "root/before.txt": recorded.replace("ip_forward = 0", "ip_forward = 1") });
    expect(run.stdout).toContain("記録の ip_forward は 1 です");
    expect(run.code).toBe(1);
    const other = await runCheckAfter("true", step.check.content, { ...planted, "root/before.txt": recorded.replace(/417/g, "418") });
    expect(other.stdout).toContain("スワップの行が、このマシンの出力と合いません");
    expect(other.code).toBe(1);
  });

  it("reads the priority from the fstab line even once it is commented out (the swap-off step's fix)", async () => {
    const commented = { "etc/fstab": "UUID=abc / ext4 defaults 0 1\n# /swapfile none swap sw,pri=417 0 0\n", "root/before.txt": `${recorded}\n` };
    const run = await runCheckAfter("true", step.check.content, commented);
    expect(run.stdout + run.stderr).toMatch(/スワップの優先度 417/);
    expect(run.code).toBe(0);
  });
});
