/**
 * The preinstall lab's quiz step (who-fixes) judged on a fake root, without VMs: its check reads
 * only /root/who-fixes.txt, so every shortcut and alternative fixture of the step runs here the
 * way checks run (clean environment, checklib first) — shortcuts must fail with the text they
 * name, alternatives and the solution must pass. The same fixtures run on real VMs in
 * lab-test.qemu.test.ts; this is the fast loop for the lenient parsing and the feedback's wording.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { CHECK_LIB } from "../grader/grader";
import { runInFakeRoot } from "../testing/fake-root";
import { loadLab } from "./load";

const roots: string[] = [];
afterEach(() => {
  for (const r of roots.splice(0)) fs.rmSync(r, { recursive: true, force: true });
});

async function runCheckAfter(fixture: string, check: string) {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), "quiz-"));
  roots.push(root);
  fs.mkdirSync(path.join(root, "root"));
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
