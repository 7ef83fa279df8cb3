import { describe, expect, it } from "vitest";
import { pollDelayMs } from "./grader";

const options = { intervalMs: 2_000, jitter: 0.2, maxBackoffMs: 60_000, quietMaxMs: 10_000 };
const middle = () => 0.5; // no jitter

describe("pollDelayMs", () => {
  it("polls every interval after a pass or the first failure", () => {
    expect(pollDelayMs(options, { unreachable: 0, quiet: 0 }, middle)).toBe(2_000);
    expect(pollDelayMs(options, { unreachable: 0, quiet: 1 }, middle)).toBe(2_000);
  });

  it("doubles per quiet failed poll in a row, up to quietMaxMs", () => {
    const waits = [2, 3, 4, 5, 6].map((quiet) => pollDelayMs(options, { unreachable: 0, quiet }, middle));
    expect(waits).toEqual([4_000, 8_000, 10_000, 10_000, 10_000]);
  });

  it("keeps every poll at the interval when quietMaxMs is off", () => {
    expect(pollDelayMs({ ...options, quietMaxMs: 0 }, { unreachable: 0, quiet: 9 }, middle)).toBe(2_000);
    expect(pollDelayMs({ ...options, quietMaxMs: 1_000 }, { unreachable: 0, quiet: 9 }, middle)).toBe(2_000);
  });

  it("backs off an unreachable machine up to maxBackoffMs, whatever the quiet count", () => {
    expect(pollDelayMs(options, { unreachable: 1, quiet: 0 }, middle)).toBe(4_000);
    expect(pollDelayMs(options, { unreachable: 10, quiet: 0 }, middle)).toBe(60_000);
  });

  it("stretches or shrinks by at most the jitter", () => {
    expect(pollDelayMs(options, { unreachable: 0, quiet: 3 }, () => 0)).toBeCloseTo(6_400);
    expect(pollDelayMs(options, { unreachable: 0, quiet: 3 }, () => 1)).toBeCloseTo(9_600);
  });
});
