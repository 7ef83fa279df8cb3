import { describe, expect, it } from "vitest";
import { parseEnv } from "./config";
import { errorForLog, startupFailureMessage } from "./startup-failure";

describe("startupFailureMessage", () => {
  it("reports a rejection with no value instead of failing on it (the issue's TypeError)", () => {
    expect(startupFailureMessage(undefined)).toBe(
      "a start-up step failed without saying why (it gave undefined); this is a bug: report it with the log above",
    );
    expect(startupFailureMessage("boom")).toContain('(it gave "boom")');
    expect(startupFailureMessage({ code: 1 })).toContain('(it gave {"code":1})');
    expect(errorForLog(undefined)).toEqual({ value: "undefined" });
  });

  it("names a taken port and what to do", () => {
    const error = Object.assign(new Error("listen EADDRINUSE: address already in use 127.0.0.1:3000"), {
      code: "EADDRINUSE",
      syscall: "listen",
      address: "127.0.0.1",
      port: 3000,
    });
    expect(startupFailureMessage(error)).toBe(
      "127.0.0.1:3000 is already in use (another Labdeck server, or another program); stop it or set HOST/PORT to a free address",
    );
  });

  it("keeps a bad environment to one line that names the variable", () => {
    let error: unknown;
    try {
      parseEnv({ PORT: "70000" });
    } catch (e) {
      error = e;
    }
    const message = startupFailureMessage(error);
    expect(message).not.toContain("\n");
    expect(message).toMatch(/^invalid environment: PORT: .*; fix it \(see "Configuration" in README\.md\)$/);
  });

  it("keeps a long error to its first line", () => {
    expect(startupFailureMessage(new Error("prisma migrate deploy failed (exit 1):\nError: P1001\nmore"))).toBe(
      "prisma migrate deploy failed (exit 1) (see the log above for the rest)",
    );
  });
});
