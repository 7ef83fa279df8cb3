/**
 * The session lifecycle cannot get stuck: on a real PostgreSQL, with a real process killed -9 in
 * the middle of a start, and a machine provider at the far edge (it records machine sets, and
 * its teardown can be made to fail) standing in for QEMU. The reconciler leaves every session
 * in a final or usable state, retries teardowns until they succeed, and leaks no machine set.
 */
import { randomBytes } from "node:crypto";
import { configureMachineKeys } from "../machines/sealed-keys";
import { spawn } from "node:child_process";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Db } from "../db/client";
import type { MachineProvider, ProvisionedMachine } from "../machines/provider";
import { startTestDb } from "../testing/test-db";
import { endSession, resumeSession, startOrResumeSession, suspendSession } from "./lab-sessions";
import { advance, IllegalTransitionError, LEASE_MS, reconcileSessions } from "./lifecycle";

/** Machine keys are sealed with the platform secret; any secret does here. */
configureMachineKeys(randomBytes(32));

let db: Db;
let url: string;
let stop: () => Promise<void>;

beforeAll(async () => {
  ({ db, url, stop } = await startTestDb());
}, 60_000);
afterAll(async () => stop?.());

/** Fake at the far edge: machine sets by session id; `failDestroys` teardowns fail first. */
function recordingProvider() {
  const live = new Map<string, ProvisionedMachine[]>();
  const state = { failDestroys: 0, destroyCalls: 0 };
  const provider: MachineProvider = {
    name: "fake-recording",
    async create(request) {
      const set = request.machines.map((name, i) => ({
        name,
        host: "127.0.0.1",
        port: 1000 + i,
        user: "root",
        privateKey: "k",
        hostKey: "h",
        providerRef: `${request.sessionId}/${name}`,
      }));
      live.set(request.sessionId, set);
      return set;
    },
    async destroy(sessionId) {
      state.destroyCalls++;
      if (state.failDestroys > 0) {
        state.failDestroys--;
        throw new Error("teardown failed (fake)");
      }
      live.delete(sessionId);
    },
    async suspend() {},
    async resume(_sid, machines) {
      return [...machines];
    },
  };
  return { provider, live, state };
}

const later = () => new Date(Date.now() + LEASE_MS + 1_000);

describe("session lifecycle with a fake provider at the far edge", () => {
  it("a process killed -9 during a start: the reconciler fails the start once its lease runs out; the learner can start again", async () => {
    const child = spawn("npx", ["tsx", "server/testing/hanging-start.ts", "killed-learner"], {
      env: { ...process.env, DATABASE_URL: url },
      stdio: ["ignore", "pipe", "inherit"],
      detached: true,
    });
    await expect
      .poll(() => db.labSession.count({ where: { learnerId: "killed-learner", state: "starting" } }), { timeout: 30_000 })
      .toBe(1);
    process.kill(-child.pid!, "SIGKILL");
    const stuck = await db.labSession.findFirstOrThrow({ where: { learnerId: "killed-learner" } });
    const { provider, live } = recordingProvider();
    // While the lease runs, the start counts as someone else's work in progress.
    expect((await reconcileSessions(db, provider)).failedStarts).toEqual([]);
    const report = await reconcileSessions(db, provider, { now: later() });
    expect(report.failedStarts).toEqual([stuck.id]);
    const after = await db.labSession.findUniqueOrThrow({ where: { id: stuck.id } });
    expect(after.state).toBe("ended");
    expect(after.endReason).toBe("failed");
    // The learner is not blocked by the dead start.
    const fresh = await startOrResumeSession(db, provider, {
      learnerId: "killed-learner",
      labSlug: "hello-terminal",
      machines: ["controlplane"],
    });
    expect(fresh.id).not.toBe(stuck.id);
    expect((await db.labSession.findUniqueOrThrow({ where: { id: fresh.id } })).state).toBe("ready");
    expect([...live.keys()]).toEqual([fresh.id]);
  }, 60_000);

  it("a start the learner retries after its process died is settled inline, not waited on for minutes", async () => {
    const { provider } = recordingProvider();
    const dead = await db.labSession.create({
      data: { learnerId: "retry-learner", labSlug: "hello-terminal", provider: "fake", leaseUntil: new Date(Date.now() - 1) },
    });
    // The start announces each session it waits on or makes: the dead one once (looked at, then
    // settled at once, not polled until the wait gives up), then its own.
    const announced: string[] = [];
    const session = await startOrResumeSession(
      db,
      provider,
      { learnerId: "retry-learner", labSlug: "hello-terminal", machines: ["controlplane"] },
      undefined,
      { onStarted: (id) => announced.push(id) },
    );
    expect(announced).toEqual([dead.id, session.id]);
    expect(session.id).not.toBe(dead.id);
    expect((await db.labSession.findUniqueOrThrow({ where: { id: dead.id } })).endReason).toBe("failed");
  });

  it("a resume whose process died goes back to suspended (machines kept), and resumes on the next visit", async () => {
    const { provider, live } = recordingProvider();
    const s = await startOrResumeSession(db, provider, {
      learnerId: "resume-learner",
      labSlug: "hello-terminal",
      machines: ["controlplane"],
    });
    expect(await suspendSession(db, provider, s.id)).toBe(true);
    expect(await advance(db, s.id, ["suspended"], "starting")).toBe(true); // a resume began; its process died
    const report = await reconcileSessions(db, provider, { now: later() });
    expect(report.revertedResumes).toEqual([s.id]);
    expect((await db.labSession.findUniqueOrThrow({ where: { id: s.id } })).state).toBe("suspended");
    expect(live.has(s.id)).toBe(true);
    await resumeSession(db, provider, s.id);
    expect((await db.labSession.findUniqueOrThrow({ where: { id: s.id } })).state).toBe("ready");
  });

  it("a teardown that fails stays `ending` and is retried until it succeeds; endReason is written once", async () => {
    const { provider, live, state } = recordingProvider();
    const s = await startOrResumeSession(db, provider, {
      learnerId: "end-learner",
      labSlug: "hello-terminal",
      machines: ["controlplane", "node01"],
    });
    state.failDestroys = 2;
    await expect(endSession(db, provider, s.id, "admin")).rejects.toThrow(/teardown failed/);
    let row = await db.labSession.findUniqueOrThrow({ where: { id: s.id } });
    expect(row.state).toBe("ending");
    expect(row.endReason).toBe("admin");
    // A second end (the clock, the learner) changes nothing: the reason stays the first one's.
    expect(await endSession(db, provider, s.id, "expired")).toBe(false);
    // The learner may start the lab again while the old machines are still being released.
    const next = await startOrResumeSession(db, provider, {
      learnerId: "end-learner",
      labSlug: "hello-terminal",
      machines: ["controlplane"],
    });
    expect(next.id).not.toBe(s.id);
    // Within the lease nobody retries; after it, one retry (fails), after the next, success.
    expect((await reconcileSessions(db, provider)).stillEnding).toEqual([]);
    expect((await reconcileSessions(db, provider, { now: later() })).stillEnding).toEqual([s.id]);
    await db.labSession.update({ where: { id: s.id }, data: { leaseUntil: new Date(Date.now() - 1) } });
    expect((await reconcileSessions(db, provider)).ended).toEqual([s.id]);
    row = await db.labSession.findUniqueOrThrow({ where: { id: s.id } });
    expect(row.state).toBe("ended");
    expect(row.endReason).toBe("admin");
    expect(row.endedAt).not.toBeNull();
    expect(state.destroyCalls).toBe(3);
    expect(live.has(s.id)).toBe(false);
  });

  it("two reconcilers at once retry a teardown once", async () => {
    const { provider, state } = recordingProvider();
    const s = await startOrResumeSession(db, provider, {
      learnerId: "race-learner",
      labSlug: "hello-terminal",
      machines: ["controlplane"],
    });
    state.failDestroys = 1;
    await expect(endSession(db, provider, s.id)).rejects.toThrow();
    await db.labSession.update({ where: { id: s.id }, data: { leaseUntil: new Date(Date.now() - 1) } });
    const calls = state.destroyCalls;
    const [a, b] = await Promise.all([reconcileSessions(db, provider), reconcileSessions(db, provider)]);
    expect([...a.ended, ...b.ended]).toEqual([s.id]);
    expect(state.destroyCalls - calls).toBe(1);
  });

  it("moves only along the lifecycle's transitions", async () => {
    const s = await db.labSession.create({ data: { learnerId: "rules", labSlug: "hello-terminal", provider: "fake", state: "ended" } });
    await expect(advance(db, s.id, ["ended"], "ready")).rejects.toBeInstanceOf(IllegalTransitionError);
    await expect(advance(db, s.id, ["ending"], "ready")).rejects.toBeInstanceOf(IllegalTransitionError);
    expect(await advance(db, s.id, ["ready"], "suspended")).toBe(false); // not in that state: no move
  });
});
