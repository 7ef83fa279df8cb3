/**
 * A cohort's limits reach its running sessions, on a real embedded PostgreSQL with a machine
 * provider at the far edge (it hands out machine rows and records suspensions): the idle check
 * reads the cohort's idle time as it is now, and a new time limit moves the deadline of the
 * cohort's sessions (time an instructor added stays added).
 */
import path from "node:path";
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Db } from "../db/client";
import { LabCatalog } from "../labs/catalog";
import { configureMachineKeys } from "../machines/sealed-keys";
import type { MachineProvider } from "../machines/provider";
import { startOrResumeSession, sweepSessions } from "../sessions/lab-sessions";
import { startTestDb } from "../testing/test-db";
import { createCohort, extendSession, updateCohort } from "./cohorts";

/** Machine keys are sealed with the platform secret; any secret does here. */
configureMachineKeys(randomBytes(32));

const LAB = "hello-terminal";
/** The platform's idle time and time limit here, minutes (a cohort that sets none gets these). */
const PLATFORM_IDLE_MINUTES = 30;
const PLATFORM_SESSION_MINUTES = 240;
const MINUTE_MS = 60_000;

let db: Db;
let stop: () => Promise<void>;
const labs = new LabCatalog(path.resolve("labs"));
const options = { platformSessionMinutes: PLATFORM_SESSION_MINUTES };

beforeAll(async () => {
  ({ db, stop } = await startTestDb());
}, 60_000);
afterAll(async () => stop?.());

/** Fake at the far edge: machines as rows, suspensions recorded by session id. */
function recordingProvider() {
  const suspended: string[] = [];
  const provider: MachineProvider = {
    name: "fake-recording",
    async create(request) {
      return request.machines.map((name, i) => ({
        name,
        host: "127.0.0.1",
        port: 1000 + i,
        user: "root",
        privateKey: "k",
        hostKey: "h",
        providerRef: `${request.sessionId}/${name}`,
      }));
    },
    async destroy() {},
    async suspend(sessionId) {
      suspended.push(sessionId);
    },
    async resume(_sid, machines) {
      return [...machines];
    },
  };
  return { provider, suspended };
}

/** A learner's session of the cohort's lab, started as the lab page starts it (cohort id, platform limit). */
async function startUnder(provider: MachineProvider, cohortId: string, learnerId: string, prepare?: () => Promise<void>) {
  const view = await startOrResumeSession(
    db,
    provider,
    { learnerId, labSlug: LAB, machines: ["controlplane"], cohortId, limitMinutes: PLATFORM_SESSION_MINUTES },
    prepare && (() => prepare()),
  );
  return db.labSession.findUniqueOrThrow({ where: { id: view.id } });
}

/** One sweep `minutes` after the session's last activity; whether it suspended the session. */
async function suspendedAfter(provider: MachineProvider, session: { id: string; lastActivityAt: Date }, minutes: number) {
  const now = new Date(session.lastActivityAt.getTime() + minutes * MINUTE_MS);
  const report = await sweepSessions(db, provider, { now, idleMs: PLATFORM_IDLE_MINUTES * MINUTE_MS });
  return report.suspended.includes(session.id);
}

describe("a cohort's idle time reaches its running sessions", () => {
  it("raised: a session started under a 1-minute idle time is not suspended at minute 2 once the cohort says 60", async () => {
    const { provider, suspended } = recordingProvider();
    const cohort = await createCohort(db, labs, { name: "Idle raised", labs: [LAB], idleMinutes: 1 }, null);
    const session = await startUnder(provider, cohort.id, "idle-raised");
    // A session that also carries its own copy of the 1 minute (as sessions started before they
    // named their cohort do): the cohort's value wins.
    const copied = await db.labSession.create({
      data: { learnerId: "idle-raised-copy", labSlug: LAB, provider: "fake", state: "ready", cohortId: cohort.id, idleMinutes: 1 },
    });
    await updateCohort(db, labs, cohort.id, { name: "Idle raised", labs: [LAB], idleMinutes: 60 }, null, options);
    expect(await suspendedAfter(provider, session, 2)).toBe(false);
    expect(await suspendedAfter(provider, copied, 2)).toBe(false);
    expect(await suspendedAfter(provider, session, 61)).toBe(true);
    expect(suspended).toEqual(expect.arrayContaining([session.id, copied.id]));
  });

  it("lowered: a session started under a 60-minute idle time is suspended at minute 2 once the cohort says 1", async () => {
    const { provider } = recordingProvider();
    const cohort = await createCohort(db, labs, { name: "Idle lowered", labs: [LAB], idleMinutes: 60 }, null);
    const session = await startUnder(provider, cohort.id, "idle-lowered");
    expect(await suspendedAfter(provider, session, 2)).toBe(false);
    await updateCohort(db, labs, cohort.id, { name: "Idle lowered", labs: [LAB], idleMinutes: 1 }, null, options);
    expect(await suspendedAfter(provider, session, 2)).toBe(true);
    expect((await db.labSession.findUniqueOrThrow({ where: { id: session.id } })).state).toBe("suspended");
  });

  it("a cohort without an idle time means the platform's, also for sessions started under one", async () => {
    const { provider } = recordingProvider();
    const cohort = await createCohort(db, labs, { name: "Idle cleared", labs: [LAB], idleMinutes: 120 }, null);
    const session = await startUnder(provider, cohort.id, "idle-cleared");
    await updateCohort(db, labs, cohort.id, { name: "Idle cleared", labs: [LAB], idleMinutes: null }, null, options);
    expect(await suspendedAfter(provider, session, PLATFORM_IDLE_MINUTES - 1)).toBe(false);
    expect(await suspendedAfter(provider, session, PLATFORM_IDLE_MINUTES + 1)).toBe(true);
  });
});

describe("a cohort's time limit reaches its running sessions", () => {
  const minutesLeft = async (id: string) => {
    const s = await db.labSession.findUniqueOrThrow({ where: { id } });
    return (s.expiresAt!.getTime() - s.readyAt!.getTime()) / MINUTE_MS;
  };

  it("moves each deadline by the change, keeping time an instructor added; the platform's when it sets none; other cohorts' sessions stay", async () => {
    const { provider } = recordingProvider();
    const cohort = await createCohort(db, labs, { name: "Limit", labs: [LAB], sessionMinutes: 60 }, null);
    const other = await createCohort(db, labs, { name: "Other", labs: [LAB], sessionMinutes: 60 }, null);
    const session = await startUnder(provider, cohort.id, "limit-moved");
    const untouched = await startUnder(provider, other.id, "limit-other");
    expect(await minutesLeft(session.id)).toBe(60);
    await extendSession(db, session.id, { minutes: 15 }, null);
    const input = { name: "Limit", labs: [LAB] };
    await updateCohort(db, labs, cohort.id, { ...input, sessionMinutes: 120 }, null, options);
    expect(await minutesLeft(session.id)).toBe(135);
    await updateCohort(db, labs, cohort.id, { ...input, sessionMinutes: null }, null, options);
    expect(await minutesLeft(session.id)).toBe(PLATFORM_SESSION_MINUTES + 15);
    expect(await minutesLeft(untouched.id)).toBe(60);
  });

  it("lowered below the time already used: the session ends at the next sweep", async () => {
    const { provider } = recordingProvider();
    const cohort = await createCohort(db, labs, { name: "Limit lowered", labs: [LAB], sessionMinutes: 120 }, null);
    const session = await startUnder(provider, cohort.id, "limit-lowered");
    const at30 = new Date(session.readyAt!.getTime() + 30 * MINUTE_MS);
    const sweep = () => sweepSessions(db, provider, { now: at30, idleMs: 0 });
    expect((await sweep()).expired).toEqual([]);
    await updateCohort(db, labs, cohort.id, { name: "Limit lowered", labs: [LAB], sessionMinutes: 20 }, null, options);
    expect((await sweep()).expired).toEqual([session.id]);
  });

  it("a session still starting takes the limit the cohort has when it becomes ready", async () => {
    const { provider } = recordingProvider();
    const cohort = await createCohort(db, labs, { name: "Limit while starting", labs: [LAB], sessionMinutes: 60 }, null);
    // The admin changes the cohort while the lab's setup runs.
    const session = await startUnder(provider, cohort.id, "limit-starting", async () => {
      await updateCohort(db, labs, cohort.id, { name: "Limit while starting", labs: [LAB], sessionMinutes: 90 }, null, options);
    });
    expect(await minutesLeft(session.id)).toBe(90);
  });

  it("a session made ahead of class without a limit gets one when the cohort sets it, counted from class start", async () => {
    const startsAt = new Date(Date.now() + 24 * 60 * MINUTE_MS);
    const cohort = await createCohort(db, labs, { name: "Ahead", labs: [LAB], startsAt: startsAt.toISOString() }, null);
    const s = await db.labSession.create({
      data: { learnerId: "ahead", labSlug: LAB, provider: "fake", state: "ready", readyAt: new Date(), cohortId: cohort.id },
    });
    await updateCohort(
      db,
      labs,
      cohort.id,
      { name: "Ahead", labs: [LAB], startsAt: startsAt.toISOString(), sessionMinutes: 45 },
      null,
      options,
    );
    const after = await db.labSession.findUniqueOrThrow({ where: { id: s.id } });
    expect(after.expiresAt!.getTime() - startsAt.getTime()).toBe(45 * MINUTE_MS);
  });
});
