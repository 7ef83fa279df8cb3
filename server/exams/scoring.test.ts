import { describe, expect, it } from "vitest";
import { EXAM_SCORER_DEFAULTS, hardRestartDue } from "./scoring";

describe("hardRestartDue (the reboot phase's hard restart)", () => {
  const options = { cleanRebootMs: 90_000, rebootMs: 240_000 };

  it("restarts a machine that still answers on its old boot past cleanRebootMs: it ignored the request", () => {
    expect(hardRestartDue(true, 89_000, options)).toBeNull();
    expect(hardRestartDue(true, 91_000, options)).toBe("ignored");
  });

  it("leaves a machine that does not answer (going down or booting) until half of rebootMs", () => {
    // Measured in scoring.vm.test.ts: three machines rebooting at once under TCG answered SSH on
    // their new boot 72-90 s after the request; a restart at 90 s started those boots over.
    expect(hardRestartDue(false, 91_000, options)).toBeNull();
    expect(hardRestartDue(false, 119_000, options)).toBeNull();
    expect(hardRestartDue(false, 121_000, options)).toBe("silent");
  });

  it("never restarts a silent machine before cleanRebootMs, whatever rebootMs is", () => {
    expect(hardRestartDue(false, 60_000, { cleanRebootMs: 90_000, rebootMs: 100_000 })).toBeNull();
    expect(hardRestartDue(false, 91_000, { cleanRebootMs: 90_000, rebootMs: 100_000 })).toBe("silent");
  });

  it("the defaults leave a silent machine more than two minutes", () => {
    expect(hardRestartDue(false, 120_000, EXAM_SCORER_DEFAULTS)).toBeNull();
  });
});
