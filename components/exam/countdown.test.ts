/** The exam clock's arithmetic: the server's clock, the alerts' thresholds, the clock's text. */
import { describe, expect, it } from "vitest";
import { clockOffsetMs, clockText, dueAlert, remainingMs, type AlertMinutes } from "./countdown";

const MIN = 60_000;

describe("countdown", () => {
  it("measures the server's clock against the middle of the request", () => {
    const page = Date.parse("2026-12-06T10:00:00Z");
    expect(clockOffsetMs("2026-12-06T10:10:00Z", page - 1_000, page + 1_000)).toBe(10 * MIN);
    expect(clockOffsetMs("2026-12-06T09:59:00Z", page, page)).toBe(-MIN);
    expect(clockOffsetMs("not a date", page, page)).toBe(0);
  });

  it("counts to the deadline on the server's clock, never below zero", () => {
    const page = Date.parse("2026-12-06T10:00:00Z");
    // The server is 10 minutes ahead: a deadline 40 minutes after its now is 40 minutes away, not 50.
    expect(remainingMs("2026-12-06T10:50:00Z", 10 * MIN, page)).toBe(40 * MIN);
    expect(remainingMs("2026-12-06T10:05:00Z", 10 * MIN, page)).toBe(0);
  });

  it("alerts at 30, 15 and 5 minutes, each once", () => {
    let shown: ReadonlySet<AlertMinutes> = new Set();
    const seen: (AlertMinutes | null)[] = [];
    for (const left of [40, 31, 30, 29, 20, 15, 14.5, 6, 5, 4, 1, 0.1]) {
      const due = dueAlert(left * MIN, shown);
      shown = due.shown;
      seen.push(due.alert);
    }
    expect(seen).toEqual([null, null, 30, null, null, 15, null, null, 5, null, null, null]);
  });

  it("says only the most urgent alert on a page opened late", () => {
    const late = dueAlert(12 * MIN, new Set());
    expect(late.alert).toBe(15);
    expect([...late.shown].sort()).toEqual([15, 30]);
    expect(dueAlert(11 * MIN, late.shown).alert).toBeNull();
    expect(dueAlert(3 * MIN, new Set()).alert).toBe(5);
  });

  it("shows the time left as a clock, rounded up to the second", () => {
    expect(clockText(40 * MIN)).toBe("40:00");
    expect(clockText(65 * MIN + 9_000)).toBe("1:05:09");
    expect(clockText(29 * MIN + 59_001)).toBe("30:00");
    expect(clockText(400)).toBe("0:01");
    expect(clockText(0)).toBe("0:00");
  });
});
