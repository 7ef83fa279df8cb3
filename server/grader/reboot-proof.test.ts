/** The reboot-proof decisions and the boot facts line, as pure functions (the grader over real sshd: grader.test.ts). */
import { describe, expect, it } from "vitest";
import { bootFactsScript, decide, newNonce, takeBootFacts } from "./reboot-proof";
import { execFileSync } from "node:child_process";

const BOOT_A = "0f0e0d0c-0b0a-4908-8706-050403020100";
const BOOT_B = "1f1e1d1c-1b1a-4918-8716-151413121110";
const at = (s: number) => new Date(Date.UTC(2026, 11, 1, 12, 0, s));

describe("boot facts line", () => {
  it("is printed by the script and taken out of the output, which keeps the rest", () => {
    const nonce = newNonce();
    const printed = execFileSync("/bin/bash", ["-c", bootFactsScript(nonce) + "echo check-out; echo warn >&2"], {
      encoding: "utf8",
      stdio: ["ignore", "pipe", "pipe"],
    });
    const taken = takeBootFacts(printed, nonce);
    expect(taken.facts?.bootId).toMatch(/^[0-9a-f-]{36}$/);
    expect(taken.facts?.uptimeSeconds).toBeGreaterThan(0);
    expect(taken.output).toBe("check-out");
  });

  it("is printed by shell builtins alone: with no PATH at all, no program can stand in for them", () => {
    const nonce = newNonce();
    const printed = execFileSync("/bin/bash", ["--noprofile", "--norc", "-c", bootFactsScript(nonce) + "echo after"], {
      encoding: "utf8",
      env: { NODE_ENV: "test", PATH: "/nonexistent" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    const taken = takeBootFacts(printed, nonce);
    expect(taken.facts?.bootId).toMatch(/^[0-9a-f-]{36}$/);
    expect(taken.output).toBe("after");
  });

  it("ignores a line with another nonce (learner output cannot forge it) and rejects malformed facts", () => {
    expect(takeBootFacts(`@labdeck-boot-aaaa ${BOOT_A} 3.0\nok`, "bbbb")).toEqual({
      facts: null,
      output: `@labdeck-boot-aaaa ${BOOT_A} 3.0\nok`,
    });
    expect(takeBootFacts(`@labdeck-boot-n1 not-a-uuid 3.0\nok`, "n1")).toEqual({ facts: null, output: "ok" });
    expect(takeBootFacts(`@labdeck-boot-n1 ${BOOT_A} -4\nok`, "n1").facts).toBeNull();
    expect(takeBootFacts(`@labdeck-boot-n1 ${BOOT_A} 12.5\n`, "n1")).toEqual({
      facts: { bootId: BOOT_A, uptimeSeconds: 12.5 },
      output: "",
    });
  });
});

describe("decide", () => {
  const pending = { stepId: "swap", bootId: BOOT_A, passedAt: at(0) };
  const facts = (bootId: string, uptimeSeconds: number) => ({ bootId, uptimeSeconds });

  it("records a first pass on its boot; keeps a pass on the same boot", () => {
    expect(decide("swap", "pass", facts(BOOT_A, 500), null, at(0))).toEqual({ kind: "record", bootId: BOOT_A });
    expect(decide("swap", "pass", facts(BOOT_A, 560), pending, at(60))).toEqual({ kind: "keep" });
  });

  it("a record of another step counts as none", () => {
    expect(decide("sysctl", "pass", facts(BOOT_A, 500), pending, at(10))).toEqual({ kind: "record", bootId: BOOT_A });
    expect(decide("sysctl", "fail", facts(BOOT_A, 500), pending, at(10))).toEqual({ kind: "keep" });
  });

  it("proves on a new boot whose uptime fits in the time since the pass", () => {
    expect(decide("swap", "pass", facts(BOOT_B, 40), pending, at(90))).toEqual({ kind: "proven" });
  });

  it("a new boot id on a machine up since before the pass is no reboot", () => {
    expect(decide("swap", "pass", facts(BOOT_B, 5_000), pending, at(90))).toEqual({ kind: "keep" });
  });

  it("a fail clears the record; no verdict (unreachable while rebooting, timeout, error) keeps it", () => {
    expect(decide("swap", "fail", facts(BOOT_B, 40), pending, at(90))).toEqual({ kind: "clear" });
    for (const outcome of ["unreachable", "timeout", "error"] as const)
      expect(decide("swap", outcome, null, pending, at(90))).toEqual({ kind: "keep" });
  });

  it("a pass without boot facts is never recorded nor proven", () => {
    expect(decide("swap", "pass", null, null, at(0))).toEqual({ kind: "keep" });
    expect(decide("swap", "pass", null, pending, at(90))).toEqual({ kind: "keep" });
  });
});
