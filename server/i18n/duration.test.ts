/** Durations read as durations in both UI languages, never as a clock time. */
import { describe, expect, it } from "vitest";
import { formatDuration } from "./duration";

describe("formatDuration", () => {
  it("writes Japanese durations with their units", () => {
    expect(formatDuration(16 * 60 + 26, "ja")).toBe("16分26秒");
    expect(formatDuration(3600 + 5 * 60 + 9, "ja")).toBe("1時間5分");
    expect(formatDuration(45, "ja")).toBe("45秒");
    expect(formatDuration(3 * 60, "ja")).toBe("3分");
    expect(formatDuration(2 * 3600 + 30, "ja")).toBe("2時間");
    expect(formatDuration(0, "ja")).toBe("0秒");
  });

  it("writes English durations with short units", () => {
    expect(formatDuration(16 * 60 + 26, "en")).toBe("16 min 26 s");
    expect(formatDuration(3600 + 5 * 60, "en")).toBe("1 h 5 min");
    expect(formatDuration(45, "en")).toBe("45 s");
    expect(formatDuration(26 * 3600, "en")).toBe("26 h");
  });

  it("drops fractions, reads a negative or unknown amount as none, and falls back to English", () => {
    expect(formatDuration(59.9, "ja")).toBe("59秒");
    expect(formatDuration(-5, "ja")).toBe("0秒");
    expect(formatDuration(Number.NaN, "en")).toBe("0 s");
    expect(formatDuration(90, "fr")).toBe("1 min 30 s");
  });

  it("never looks like a clock time", () => {
    for (const seconds of [0, 9, 61, 986, 3599, 3600, 3661, 86_399]) {
      for (const locale of ["ja", "en"]) expect(formatDuration(seconds, locale)).not.toMatch(/\d:\d/);
    }
  });
});
