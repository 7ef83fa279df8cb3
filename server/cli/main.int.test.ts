/** The labdeck CLI as a process: labs validate / labs test on real netns sshd hosts, bad flags. */
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "labdeck-cli-"));
afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }));

function labdeck(...args: string[]) {
  const r = spawnSync(process.execPath, ["--import", "tsx", "server/cli/main.ts", ...args], {
    encoding: "utf8",
    env: { ...process.env, LOG_LEVEL: "warn" },
    timeout: 120_000,
  });
  return { code: r.status, out: r.stdout + r.stderr };
}

/** A lab whose only check already passes before the solution: `labs test` must reject it. */
function writeLazyLab() {
  const dir = path.join(tmp, "labs", "lazy");
  const put = (f: string, c: string, mode = 0o644) => {
    fs.mkdirSync(path.dirname(path.join(dir, f)), { recursive: true });
    fs.writeFileSync(path.join(dir, f), c, { mode });
  };
  put(
    "lab.yaml",
    "title: lazy\nsummary: a check that always passes\ndurationMinutes: 1\nsteps:\n  - { id: always, title: always, machine: node01 }\n",
  );
  put("lesson.md", "#\n");
  put("steps/always/step.md", "x\n");
  put("steps/always/hint.md", "x\n");
  put("steps/always/check.sh", "#!/bin/bash\necho fine\n", 0o755);
  put("steps/always/solution.sh", "#!/bin/bash\ntrue\n", 0o755);
  return path.join(tmp, "labs");
}

describe("labdeck CLI", () => {
  it("validates every lab in the repository", () => {
    const r = labdeck("labs", "validate");
    expect(r.out).toContain("ok    hello-terminal");
    expect(r.out).toMatch(/ok {4}preinstall-checks \(7 steps, \d+ fixtures\)/);
    // A warning, not a failure: a boot-state step nobody proved against "true only until the next boot".
    expect(r.out).toMatch(/warn {2}labs\/multi-node\/steps\/revive-node02: verifyByReboot step without shortcuts/);
    expect(r.code).toBe(0);
  });

  it("reports a broken lab by file and field, exit 1", () => {
    const labs = path.join(tmp, "broken-labs");
    fs.mkdirSync(path.join(labs, "bad"), { recursive: true });
    fs.writeFileSync(path.join(labs, "bad", "lab.yaml"), "title: x\nsummary: y\ndurationMinutes: 0\n");
    const r = labdeck("labs", "validate", "--labs-dir", labs);
    expect(r.code).toBe(1);
    expect(r.out).toMatch(/bad\/lab\.yaml: durationMinutes/);
  });

  it("proves the demo lab on real hosts: each check fails before and passes after its solution", () => {
    const r = labdeck("labs", "test", "hello-terminal");
    expect(r.out).toMatch(/hello-file\s+fail\s+pass\s+pass\s+n\/a\s+none\s+none\s+OK/);
    expect(r.out).toMatch(/node02-hostname\s+fail\s+pass\s+pass\s+n\/a\s+none\s+none\s+OK/);
    expect(r.code).toBe(0);
  });

  it("fails a lab whose check passes before the solution", () => {
    const r = labdeck("labs", "test", "lazy", "--labs-dir", writeLazyLab());
    expect(r.out).toMatch(/always.*FAIL: check passes before the solution/);
    expect(r.code).toBe(1);
  });

  it("refuses a lab that changes its machines on netns hosts (they are this machine), before making any", () => {
    const r = labdeck("labs", "test", "preinstall-checks", "--machines", "netns");
    expect(r.out).toMatch(/preinstall-checks changes its machines \(changesMachine: true\).*use --machines qemu/);
    expect(r.code).toBe(1);
  });

  it.each([
    [["labs", "test", "hello-terminal", "--steps", "nope"], /--steps: hello-terminal has no step nope/],
    [["labs", "test", "hello-terminal", "--steps", "a,,b"], /--steps: must be step ids/],
    [["labs"], /unknown command/],
    [["labs", "test", "x", "--machines", "bogus"], /--machines: must be qemu, netns or hosts:<file>/],
    [["labs", "validate", "--frob"], /Unknown option '--frob'/],
    [["image", "frobnicate"], /unknown|usage/i],
    [["session", "up", "--memory", "lots"], /--memory/],
  ])("rejects %j with usage and exit 2", (args, message) => {
    const r = labdeck(...args);
    expect(r.code).toBe(2);
    expect(r.out).toMatch(message);
    expect(r.out).toContain("usage:");
  });
});
