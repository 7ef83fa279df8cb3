import { describe, expect, it } from "vitest";
import { newEpochBase, UNKNOWN_END_JUMP, type EpochRecord } from "./epochs";

const known = (...records: [string, EpochRecord][]) => new Map(records);

describe("newEpochBase", () => {
  it("starts a terminal's first log at 0", () => {
    expect(newEpochBase(known(), null, undefined)).toBe(0);
    expect(newEpochBase(known(), null, 500)).toBe(0);
  });

  it("follows the previous log's end when this process read it (a reboot it saw)", () => {
    expect(newEpochBase(known(["b1/i1", { base: 0, end: null }]), { base: 0, end: 1234 }, 99)).toBe(1234);
    expect(newEpochBase(known(), { base: 1000, end: 24 }, undefined)).toBe(1024);
  });

  it("after a log no process saw begin: the latest recorded end, or the resuming viewer's offset when it is further", () => {
    const records = known(["b1/i1", { base: 0, end: 700 }], ["b2/i1", { base: 700, end: 300 }]);
    expect(newEpochBase(records, null, undefined)).toBe(1000);
    expect(newEpochBase(records, null, 1000)).toBe(1000);
    expect(newEpochBase(records, null, 1200)).toBe(1200);
    expect(newEpochBase(records, null, 400)).toBe(1000); // an old viewer: it gets a snapshot
  });

  it("jumps past any offset a viewer can hold when the latest earlier log's end was never recorded (its process was killed)", () => {
    const records = known(["b1/i1", { base: 0, end: 700 }], ["b2/i1", { base: 700, end: null }]);
    expect(newEpochBase(records, null, 900)).toBe(900 + UNKNOWN_END_JUMP);
    expect(newEpochBase(records, null, undefined)).toBe(700 + UNKNOWN_END_JUMP);
    expect(UNKNOWN_END_JUMP).toBeLessThan(Number.MAX_SAFE_INTEGER / 1024); // offsets stay exact in a float64
  });
});
