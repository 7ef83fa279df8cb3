/**
 * A terminal's holder record (holder-health.ts): how a failure is classified (a misbehaving holder
 * versus no holder at all), the OPEN cap, the failure streak and its capped backoff.
 */
import { describe, expect, it } from "vitest";
import { HolderMisbehaviourError, HOLDER_MISBEHAVIOURS } from "../holder/misbehaviour";
import {
  HOLDER_BACKOFF_MS,
  HOLDER_FAILURE_STREAK,
  HOLDER_OPENS_PER_WINDOW,
  HolderHealth,
  OPEN_RATE_WINDOW_MS,
  answered,
  holderFailureReason,
} from "./holder-health";

describe("holderFailureReason", () => {
  it("names each misbehaviour as holder-misbehaving", () => {
    for (const kind of HOLDER_MISBEHAVIOURS)
      expect(holderFailureReason(new HolderMisbehaviourError(kind, "x"))).toBe(`holder-misbehaving: ${kind}`);
  });

  it("names a holder that is not there as unreachable, with the system's code", () => {
    const coded = Object.assign(new Error("connect failed"), { code: "ECONNREFUSED" });
    expect(holderFailureReason(coded)).toBe("unreachable: ECONNREFUSED");
    // What the exec relay (labdeck-holder --attach) says when the socket is missing or nobody listens.
    const relay = (e: string) =>
      new Error(`the holder closed the connection before HELLO: cannot connect to /run/labdeck-holder/holder.sock: ${e}`);
    expect(holderFailureReason(relay("[Errno 2] No such file or directory"))).toBe("unreachable: ENOENT");
    expect(holderFailureReason(relay("[Errno 111] Connection refused"))).toBe("unreachable: ECONNREFUSED");
    expect(holderFailureReason(new Error("no HELLO from the holder within 5000 ms"))).toBe("unreachable: ETIMEDOUT");
    expect(holderFailureReason(new Error("the holder closed the connection before HELLO"))).toBe("unreachable: no-holder");
  });
});

describe("HolderHealth", () => {
  it("allows HOLDER_OPENS_PER_WINDOW OPENs a window, then gives up (open-rate) until reset", () => {
    let now = 1_000_000;
    const health = new HolderHealth(() => now);
    for (let i = 0; i < HOLDER_OPENS_PER_WINDOW; i++) expect(health.allowOpen()).toBe(true);
    expect(health.allowOpen()).toBe(false);
    expect(health.givenUp).toBe(true);
    expect(health.reason).toBe("holder-misbehaving: open-rate");
    now += OPEN_RATE_WINDOW_MS;
    expect(health.allowOpen()).toBe(true); // the window moved on
    expect(health.givenUp).toBe(true); // but the holder stays given up until a probe finds it healthy
    health.reset();
    expect(health.givenUp).toBe(false);
  });

  it("backs off more with each failure in a row, capped, and gives up after HOLDER_FAILURE_STREAK", () => {
    const health = new HolderHealth();
    expect(health.backoffMs()).toBe(0);
    const waits: number[] = [];
    for (let i = 0; i < HOLDER_FAILURE_STREAK; i++) {
      expect(health.givenUp).toBe(false);
      expect(health.failed(new HolderMisbehaviourError("gone-loop", "x"))).toBe("holder-misbehaving: gone-loop");
      waits.push(health.backoffMs());
    }
    expect(health.givenUp).toBe(true);
    expect(health.reason).toBe("holder-misbehaving: gone-loop");
    expect(waits).toEqual(HOLDER_BACKOFF_MS.slice(0, HOLDER_FAILURE_STREAK));
    health.failed(new Error("x"));
    expect(health.backoffMs()).toBe(HOLDER_BACKOFF_MS.at(-1)); // the cap
  });

  it("a link that worked ends the streak", () => {
    const health = new HolderHealth();
    for (let i = 0; i < HOLDER_FAILURE_STREAK - 1; i++) health.failed(new HolderMisbehaviourError("bad-frame", "x"));
    health.healthy();
    expect(health.failures).toBe(0);
    health.failed(new HolderMisbehaviourError("bad-frame", "x"));
    expect(health.givenUp).toBe(false);
  });
});

describe("answered", () => {
  it("is a protocol misbehaviour when the holder does not answer in time", async () => {
    await expect(answered(new Promise(() => undefined), "OPEN", 10)).rejects.toMatchObject({ kind: "protocol" });
    await expect(answered(Promise.resolve(7), "OPEN", 10)).resolves.toBe(7);
  });
});
