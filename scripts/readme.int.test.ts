/**
 * The README's commands work as written on a fresh root Debian/Ubuntu, which has no sudo: no
 * command under an "as root" heading starts with sudo, nor does any scripts/up.sh variant in
 * the text, no script calls sudo, and .ci/run runs the README's test command.
 */
import { readFileSync, readdirSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { readmeCommands } from "./readme";

const root = path.resolve(import.meta.dirname, "..");

describe("README commands", () => {
  const commands = readmeCommands(readFileSync(path.join(root, "README.md"), "utf8"));

  it("start with the run command and the test command, as root and without sudo", () => {
    const run = commands.filter((c) => /Run it/.test(c.heading));
    expect(run[0]).toMatchObject({ command: "bash scripts/up.sh", block: true });
    expect(run[0]!.heading).toMatch(/as root/);
    const test = commands.filter((c) => /Test it/.test(c.heading) && c.block);
    expect(test[0]).toMatchObject({ command: "npm test" });
    expect(test[0]!.heading).toMatch(/as root/);
    for (const c of commands.filter((c) => /as root/.test(c.heading))) {
      expect(c.command, `under "${c.heading}"`).not.toMatch(/^(\S+=\S*\s+)*sudo\b/);
    }
  });

  it("every scripts/up.sh variant in the text runs without sudo", () => {
    const variants = commands.filter((c) => c.command.includes("scripts/up.sh")).map((c) => c.command);
    expect(variants).toContain("LABDECK_MACHINES=netns-demo bash scripts/up.sh");
    for (const v of variants) expect(v).not.toMatch(/\bsudo\b/);
  });

  it("no script calls sudo, and .ci/run runs the README's test command", () => {
    for (const file of readdirSync(path.join(root, "scripts")).filter((f) => f.endsWith(".sh"))) {
      const code = readFileSync(path.join(root, "scripts", file), "utf8")
        .split("\n")
        .filter((l) => !/^\s*#/.test(l) && !/\becho\b/.test(l));
      expect(
        code.filter((l) => /(^|[;&|]\s*)sudo\s/.test(l.trim())),
        file,
      ).toEqual([]);
    }
    const ci = readFileSync(path.join(root, ".ci", "run"), "utf8")
      .split("\n")
      .map((l) => l.trim());
    const testCommand = commands.find((c) => /Test it/.test(c.heading) && c.block)!.command;
    expect(ci).toContain(testCommand);
    expect(ci.filter((l) => /^sudo\b/.test(l))).toEqual([]);
  });
});
