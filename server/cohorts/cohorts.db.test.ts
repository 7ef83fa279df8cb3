/**
 * Cohorts, CSV import, audit, time extension and the dashboard's numbers on a real embedded
 * PostgreSQL (no machines: sessions and check runs are rows made by the test).
 */
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Db } from "../db/client";
import { LabCatalog } from "../labs/catalog";
import { startTestDb } from "../testing/test-db";
import { randomBytes } from "node:crypto";
import { invitationLinks } from "../auth/invitations";
import { listAudit, recordAudit } from "../audit";
import {
  addMember,
  cohortLimitsFor,
  cohortMembers,
  CohortRuleError,
  createCohort,
  extendSession,
  listCohorts,
  updateCohort,
} from "./cohorts";
import { CSV_MAX_BYTES, importCohortCsv, parseCohortCsv } from "./csv-import";
import { byStuckLongest, cohortDashboard, sessionTimeline } from "./dashboard";
import { capacitySnapshot, readMeminfo } from "./capacity";
import fs from "node:fs/promises";
import os from "node:os";
import { EventBus } from "../events/bus";
import { log } from "../log";
import { WatchRegistry } from "./watchers";

const LAB = "hello-terminal";
let db: Db;
let url: string;
let stop: () => Promise<void>;
const labs = new LabCatalog(path.resolve("labs"));
const link = invitationLinks(randomBytes(32), "http://x");

async function user(email: string, role: "learner" | "instructor" | "admin" = "learner") {
  return db.user.create({ data: { id: email, email, name: email.split("@")[0]!, role } });
}

beforeAll(async () => {
  ({ db, url, stop } = await startTestDb());
}, 60_000);
afterAll(async () => stop?.());

describe("cohort CRUD", () => {
  it("creates a cohort with dates, labs and limits, and audits it", async () => {
    const admin = await user("admin1@x.test", "admin");
    const c = await createCohort(
      db,
      labs,
      {
        name: " CKA 12月 ",
        startsAt: "2026-12-01T09:00:00Z",
        endsAt: "2026-12-03T18:00:00Z",
        labs: [LAB],
        sessionMinutes: 120,
        idleMinutes: "30",
      },
      admin.id,
    );
    expect(c).toMatchObject({ name: "CKA 12月", labs: [LAB], sessionMinutes: 120, idleMinutes: 30 });
    expect(c.startsAt?.toISOString()).toBe("2026-12-01T09:00:00.000Z");
    const audit = await listAudit(db, { targetIds: [c.id] });
    expect(audit.map((a) => [a.action, a.actorName])).toEqual([["cohort.create", "admin1"]]);
    expect((await listCohorts(db)).some((x) => x.id === c.id)).toBe(true);
  });

  it("refuses unknown labs, end before start, bad minutes — and writes nothing", async () => {
    const before = await db.cohort.count();
    await expect(createCohort(db, labs, { name: "x", labs: ["no-such-lab"] }, null)).rejects.toMatchObject({ code: "unknownLab" });
    await expect(createCohort(db, labs, { name: "x", startsAt: "2026-12-02", endsAt: "2026-12-01" }, null)).rejects.toThrow(
      /after startsAt/,
    );
    await expect(createCohort(db, labs, { name: "x", sessionMinutes: 0 }, null)).rejects.toThrow();
    await expect(createCohort(db, labs, { name: "", labs: [] }, null)).rejects.toThrow();
    await expect(createCohort(db, labs, { name: "x", labs: ["../etc"] }, null)).rejects.toThrow();
    expect(await db.cohort.count()).toBe(before);
  });

  it("edits a cohort; members: instructors must be instructors, learners learners", async () => {
    const c = await createCohort(db, labs, { name: "Edit me" }, null);
    const e = await updateCohort(db, labs, c.id, { name: "Edited", labs: [LAB], sessionMinutes: 60 }, null, {
      platformSessionMinutes: 240,
    });
    expect(e).toMatchObject({ name: "Edited", labs: [LAB], sessionMinutes: 60, idleMinutes: null });
    const teacher = await user("teacher1@x.test", "instructor");
    const learner = await user("learner1@x.test");
    await addMember(db, c.id, { email: "TEACHER1@x.test", role: "instructor" }, null);
    await expect(addMember(db, c.id, { email: learner.email, role: "instructor" }, null)).rejects.toMatchObject({ code: "wrongUserRole" });
    await expect(addMember(db, c.id, { email: "nobody@x.test", role: "learner" }, null)).rejects.toMatchObject({ code: "noSuchUser" });
    await addMember(db, c.id, { email: learner.email, role: "learner" }, null);
    const { members } = await cohortMembers(db, c.id);
    expect(members.map((m) => [m.email, m.role])).toEqual([
      [learner.email, "learner"],
      [teacher.email, "instructor"],
    ]);
    expect((await listCohorts(db, { instructorId: teacher.id })).map((x) => x.id)).toEqual([c.id]);
  });
});

describe("cohort limits for a learner's session", () => {
  it("come from the newest live cohort that has the lab; none otherwise", async () => {
    const learner = await user("limits@x.test");
    expect(await cohortLimitsFor(db, learner.id, LAB)).toBeNull();
    const old = await createCohort(db, labs, { name: "Old", labs: [LAB], sessionMinutes: 30 }, null);
    await db.cohortMember.create({ data: { cohortId: old.id, userId: learner.id, role: "learner" } });
    expect(await cohortLimitsFor(db, learner.id, LAB)).toEqual({
      cohortId: old.id,
      sessionMinutes: 30,
      idleMinutes: null,
      startsAt: null,
      endsAt: null,
      examAttempts: 1,
      examMinutes: null,
    });
    const other = await createCohort(db, labs, { name: "No such lab in it", labs: [], sessionMinutes: 5 }, null);
    await db.cohortMember.create({ data: { cohortId: other.id, userId: learner.id, role: "learner" } });
    expect((await cohortLimitsFor(db, learner.id, LAB))?.cohortId).toBe(old.id);
    await db.cohort.update({ where: { id: old.id }, data: { endedAt: new Date() } });
    expect(await cohortLimitsFor(db, learner.id, LAB)).toBeNull();
  });
});

describe("CSV import", () => {
  it("reports malformed rows, bad emails, roles, duplicates and open invitations by line; existing accounts become members; keeps good rows", async () => {
    const c = await createCohort(db, labs, { name: "CSV" }, null);
    await user("taken@x.test");
    await importCohortCsv(db, c.id, "already@x.test,Already\n", null, link);
    const csv = [
      "email,name,role", // 1 header
      "a@x.test,Alice", // 2 good
      "not-an-email,Bob", // 3 email
      "c@x.test,Carol,instructor", // 4 good
      "d@x.test,Dave,admin", // 5 role
      "A@X.test,Alice again", // 6 duplicate of 2
      "e@x.test", // 7 columns
      "", // 8 empty: skipped
      "taken@x.test,Taken", // 9 existing account: added as a member
      "already@x.test,Already", // 10 invited
      'f@x.test,"Frank, Jr."', // 11 good (quoted comma)
      "g@x.test,,", // 12 name
    ].join("\n");
    const report = await importCohortCsv(db, c.id, csv, null, link);
    expect(report.invited.map((r) => [r.line, r.email, r.role])).toEqual([
      [2, "a@x.test", "learner"],
      [4, "c@x.test", "instructor"],
      [11, "f@x.test", "learner"],
    ]);
    expect(report.invited[2]!.name).toBe("Frank, Jr.");
    expect(report.invited.every((r) => /\/invite\/[A-Za-z0-9_-]{43}$/.test(r.url))).toBe(true);
    expect(report.problems.map((p) => [p.line, p.code])).toEqual([
      [3, "email"],
      [5, "role"],
      [6, "duplicate"],
      [7, "columns"],
      [10, "invited"],
      [12, "name"],
    ]);
    expect(report.rows).toBe(10);
    expect(report.added.map((r) => [r.line, r.email])).toEqual([[9, "taken@x.test"]]);
    expect((await cohortMembers(db, c.id)).members.map((m) => m.email)).toEqual(["taken@x.test"]);
    const rows = await db.invitation.findMany({ where: { cohortId: c.id }, orderBy: { email: "asc" } });
    expect(rows.map((r) => [r.email, r.role])).toEqual([
      ["a@x.test", "learner"],
      ["already@x.test", "learner"],
      ["c@x.test", "instructor"],
      ["f@x.test", "learner"],
    ]);
  });

  it("imports the largest file allowed (2,000 rows) in one transaction", async () => {
    const c = await createCohort(db, labs, { name: "Max" }, null);
    const csv = Array.from({ length: 2000 }, (_, i) => `max${i}@x.test,Max ${i}`).join("\n");
    const started = performance.now();
    const report = await importCohortCsv(db, c.id, csv, null, link);
    const ms = performance.now() - started;
    console.log(`CSV import: 2000 rows (${Buffer.byteLength(csv)} bytes) in ${ms.toFixed(0)} ms`);
    expect(report.invited).toHaveLength(2000);
    expect(await db.invitation.count({ where: { cohortId: c.id } })).toBe(2000);
    expect(parseCohortCsv(csv + "\nextra@x.test,Extra").problems.map((p) => p.code)).toEqual(["tooManyRows"]);
  });

  it("a file that does not parse (unclosed quote) writes nothing and names the line", async () => {
    const c = await createCohort(db, labs, { name: "Broken" }, null);
    const report = await importCohortCsv(db, c.id, 'a@x.test,Ann\nb@x.test,"Bob\n', null, link);
    expect(report.invited).toEqual([]);
    expect(report.problems).toHaveLength(1);
    expect(report.problems[0]).toMatchObject({ code: "malformed" });
    expect(report.problems[0]!.line).toBeGreaterThanOrEqual(2);
    expect(await db.invitation.count({ where: { cohortId: c.id } })).toBe(0);
  });

  it("an oversized file is refused before parsing, and writes nothing", async () => {
    const c = await createCohort(db, labs, { name: "Big" }, null);
    const row = "someone@x.test,Someone\n";
    const big = row.repeat(Math.ceil((CSV_MAX_BYTES + 1) / row.length));
    const report = await importCohortCsv(db, c.id, Buffer.from(big), null, link);
    expect(report.problems.map((p) => p.code)).toEqual(["tooLarge"]);
    expect(await db.invitation.count({ where: { cohortId: c.id } })).toBe(0);
    expect(parseCohortCsv("email,name\n").problems.map((p) => p.code)).toEqual(["empty"]);
  });

  it("nothing is half-written: a failure inside the transaction leaves no invitation", async () => {
    const c = await createCohort(db, labs, { name: "Atomic" }, null);
    // Real failure at the far edge: a link maker that throws after the rows were inserted.
    await expect(
      importCohortCsv(db, c.id, "p@x.test,P\nq@x.test,Q\n", null, {
        secret: randomBytes(32),
        linkFor: () => {
          throw new Error("link maker failed");
        },
      }),
    ).rejects.toThrow("link maker failed");
    expect(await db.invitation.count({ where: { cohortId: c.id } })).toBe(0);
    expect(await db.auditLog.count({ where: { targetId: c.id, action: "cohort.import" } })).toBe(0);
  });

  it("an invitation from the CSV makes its acceptor a member of the cohort with the row's role", async () => {
    const c = await createCohort(db, labs, { name: "Bound" }, null);
    const report = await importCohortCsv(db, c.id, "bound@x.test,Bound,instructor\n", null, link);
    const row = await db.invitation.findFirstOrThrow({ where: { email: "bound@x.test" } });
    expect(row).toMatchObject({ cohortId: c.id, role: "instructor", usedAt: null });
    expect(report.invited).toHaveLength(1);
  });
});

describe("sessions: extend time, dashboard", () => {
  it("extends a live session's expiry, refuses ended ones and those without a limit; audited", async () => {
    const learner = await user("ext@x.test");
    const expiresAt = new Date("2026-12-01T10:00:00Z");
    const s = await db.labSession.create({ data: { learnerId: learner.id, labSlug: LAB, provider: "static", state: "ready", expiresAt } });
    const { expiresAt: next } = await extendSession(db, s.id, { minutes: 15 }, "admin1@x.test");
    expect(next.toISOString()).toBe("2026-12-01T10:15:00.000Z");
    expect((await db.labSession.findUniqueOrThrow({ where: { id: s.id } })).expiresAt?.toISOString()).toBe("2026-12-01T10:15:00.000Z");
    await expect(extendSession(db, s.id, { minutes: 0 }, null)).rejects.toThrow();
    const open = await db.labSession.create({ data: { learnerId: learner.id, labSlug: "other", provider: "static", state: "ready" } });
    await expect(extendSession(db, open.id, { minutes: 5 }, null)).rejects.toMatchObject({ code: "sessionHasNoLimit" });
    await db.labSession.update({ where: { id: s.id }, data: { state: "ended" } });
    await expect(extendSession(db, s.id, { minutes: 5 }, null)).rejects.toBeInstanceOf(CohortRuleError);
    const audit = await listAudit(db, { targetIds: [s.id] });
    expect(audit.map((a) => [a.action, a.detail])).toEqual([["session.extend", { minutes: 15, expiresAt: "2026-12-01T10:15:00.000Z" }]]);
  });

  it("dashboard: learners × steps, stuck longest first, funnel, time on steps, last failure; timeline", async () => {
    const lab = await labs.get(LAB);
    const stepCount = lab.steps.length;
    expect(stepCount).toBeGreaterThanOrEqual(2);
    const c = await createCohort(db, labs, { name: "Dash", labs: [LAB] }, null);
    const t0 = new Date("2026-12-01T09:00:00Z");
    const now = new Date("2026-12-01T10:00:00Z");
    const mk = async (email: string) => {
      const u = await user(email);
      await db.cohortMember.create({ data: { cohortId: c.id, userId: u.id, role: "learner" } });
      return u;
    };
    const fast = await mk("fast@x.test");
    const slow = await mk("slow@x.test");
    const idle = await mk("idle@x.test");
    // fast: passed step 0 at 09:10, on step 1 since then.
    const sf = await db.labSession.create({
      data: {
        learnerId: fast.id,
        labSlug: LAB,
        provider: "static",
        state: "ready",
        createdAt: t0,
        currentStepId: lab.steps[1]!.id,
        currentStepSince: new Date("2026-12-01T09:10:00Z"),
      },
    });
    await db.stepCompletion.create({ data: { sessionId: sf.id, stepId: lab.steps[0]!.id, completedAt: new Date("2026-12-01T09:10:00Z") } });
    // slow: still on step 0 since 09:00 with a failing check.
    const ss = await db.labSession.create({
      data: {
        learnerId: slow.id,
        labSlug: LAB,
        provider: "static",
        state: "ready",
        createdAt: t0,
        currentStepId: lab.steps[0]!.id,
        currentStepSince: t0,
      },
    });
    await db.checkRun.create({
      data: {
        sessionId: ss.id,
        stepId: lab.steps[0]!.id,
        machine: "controlplane",
        trigger: "poll",
        outcome: "fail",
        output: "file missing",
        durationMs: 20,
        createdAt: new Date("2026-12-01T09:30:00Z"),
        lastAt: new Date("2026-12-01T09:40:00Z"),
        count: 300,
      },
    });
    await db.checkRun.create({
      data: {
        sessionId: ss.id,
        stepId: lab.steps[0]!.id,
        machine: "controlplane",
        trigger: "manual",
        outcome: "fail",
        output: "still missing",
        durationMs: 25,
        createdAt: new Date("2026-12-01T09:50:00Z"),
        lastAt: new Date("2026-12-01T09:50:00Z"),
      },
    });
    const d = await cohortDashboard(db, labs, c.id, undefined, now);
    expect(d.labSlug).toBe(LAB);
    expect(d.steps.map((s) => s.id)).toEqual(lab.steps.map((s) => s.id));
    expect(d.learners.map((l) => l.email)).toEqual([slow.email, fast.email, idle.email]);
    const [ls, lf, li] = d.learners;
    expect(ls).toMatchObject({
      stepsDone: 0,
      currentStepId: lab.steps[0]!.id,
      lastFailure: { outcome: "fail", output: "still missing", at: "2026-12-01T09:50:00.000Z" },
    });
    expect(ls!.stepSeconds[0]).toBe(3600);
    expect(lf).toMatchObject({ stepsDone: 1, currentStepId: lab.steps[1]!.id, lastFailure: null });
    expect(lf!.stepSeconds.slice(0, 2)).toEqual([600, 3000]);
    expect(li).toMatchObject({ state: "none", sessionId: null });
    expect(d.funnel[0]).toBe(1);
    expect(d.funnel[1]).toBe(0);
    const timeline = await sessionTimeline(db, ss.id);
    expect(timeline.map((e) => [e.trigger, e.output, e.count, e.lastAt])).toEqual([
      ["poll", "file missing", 300, "2026-12-01T09:40:00.000Z"],
      ["manual", "still missing", 1, "2026-12-01T09:50:00.000Z"],
    ]);
  });

  it("dashboard: cells match by step id; a session on an older lab version says so (columns: the current version)", async () => {
    const lab = await labs.get(LAB);
    const c = await createCohort(db, labs, { name: "Versions", labs: [LAB] }, null);
    const u = await user("old-version@x.test");
    await db.cohortMember.create({ data: { cohortId: c.id, userId: u.id, role: "learner" } });
    // An older version of the lab: its first step, then one the current lab does not have.
    const old = { ...lab, steps: [lab.steps[0]!, { ...lab.steps[1]!, id: "gone-step" }, ...lab.steps.slice(1)] };
    await db.labVersion.create({ data: { slug: LAB, hash: "old-hash", content: JSON.parse(JSON.stringify(old)) } });
    const s = await db.labSession.create({
      data: { learnerId: u.id, labSlug: LAB, provider: "static", state: "ready", labVersion: "old-hash", currentStepId: "gone-step" },
    });
    await db.stepCompletion.create({ data: { sessionId: s.id, stepId: lab.steps[0]!.id } });
    const d = await cohortDashboard(db, labs, c.id);
    expect(d.labVersion).toMatch(/^[0-9a-f]{64}$/);
    expect(d.steps.map((x) => x.id)).toEqual(lab.steps.map((x) => x.id));
    expect(d.learners[0]).toMatchObject({
      labVersion: "old-hash",
      outdated: true,
      doneStepIds: [lab.steps[0]!.id],
      stepsDone: 1,
      currentStepId: "gone-step",
    });
    expect(d.funnel[0]).toBe(1);
    await db.labSession.update({ where: { id: s.id }, data: { state: "ended", endedAt: new Date() } });
    expect((await cohortDashboard(db, labs, c.id)).learners[0]).toMatchObject({ outdated: false });
  });

  it("dashboard: a learner whose current step passed now and waits for a reboot proof says so; a record of another step does not", async () => {
    const lab = await labs.get(LAB);
    const c = await createCohort(db, labs, { name: "Reboot proof", labs: [LAB] }, null);
    const u = await user("awaiting-reboot@x.test");
    await db.cohortMember.create({ data: { cohortId: c.id, userId: u.id, role: "learner" } });
    const [first, second] = [lab.steps[0]!.id, lab.steps[1]!.id];
    const proof = { proofBootId: "0f0e0d0c-0b0a-4908-8706-050403020100", proofPassedAt: new Date() };
    const s = await db.labSession.create({
      data: { learnerId: u.id, labSlug: LAB, provider: "static", state: "ready", currentStepId: first, proofStepId: first, ...proof },
    });
    expect((await cohortDashboard(db, labs, c.id)).learners[0]).toMatchObject({ currentStepId: first, awaitingReboot: true });
    // A record left from a step the session is no longer on (a version move) is not shown.
    await db.labSession.update({ where: { id: s.id }, data: { currentStepId: second } });
    expect((await cohortDashboard(db, labs, c.id)).learners[0]).toMatchObject({ currentStepId: second, awaitingReboot: false });
  });

  it("stuck-longest order puts finished learners last", () => {
    const base = {
      userId: "",
      email: "",
      sessionId: "s",
      state: "ready" as const,
      stepsDone: 0,
      doneStepIds: [],
      currentStepId: "a",
      awaitingReboot: false,
      labVersion: null,
      outdated: false,
      lastFailure: null,
      stepSeconds: [],
      expiresAt: null,
    };
    const list = [
      { ...base, name: "done", completed: true, currentSince: null },
      { ...base, name: "recent", completed: false, currentSince: "2026-12-01T09:59:00Z" },
      { ...base, name: "long", completed: false, currentSince: "2026-12-01T09:00:00Z" },
    ];
    expect(list.sort(byStuckLongest(new Date("2026-12-01T10:00:00Z"))).map((l) => l.name)).toEqual(["long", "recent", "done"]);
  });
});

describe("audit and capacity helpers", () => {
  it("recordAudit refuses an unknown action and writes nothing", async () => {
    const before = await db.auditLog.count();
    await expect(recordAudit(db, { actorId: null, action: "nope" as never, targetType: "cohort", targetId: "x" })).rejects.toThrow();
    expect(await db.auditLog.count()).toBe(before);
  });

  it("reads MemTotal and MemAvailable from a meminfo file", async () => {
    const file = path.join(await fs.mkdtemp(path.join(os.tmpdir(), "meminfo-")), "meminfo");
    await fs.writeFile(file, "MemTotal:       24000000 kB\nMemFree:  1 kB\nMemAvailable:   12000000 kB\n");
    expect(await readMeminfo(file)).toEqual({ totalBytes: 24000000 * 1024, availableBytes: 12000000 * 1024 });
    expect(await readMeminfo(file + ".missing")).toBeNull();
    expect((await readMeminfo("/proc/meminfo"))!.totalBytes).toBeGreaterThan(0);
  });

  it("counts a lab's live sessions (ready, and starting past the queue) apart from its queued ones, with its size and target", async () => {
    const slug = "preinstall-checks"; // no other test here starts it
    const make = (state: "ready" | "starting" | "ended", startStage: string | null) =>
      db.labSession.create({
        data: { learnerId: `cap-${randomBytes(4).toString("hex")}`, labSlug: slug, provider: "qemu", state, startStage },
      });
    await make("ready", null);
    await make("starting", "setup");
    await make("starting", "queued");
    await make("ended", null);
    await db.poolTarget.create({ data: { labSlug: slug, reserve: 1, initial: 2, cap: 3 } });
    const provider = { name: "qemu", create: async () => [], destroy: async () => undefined };
    const lab = (await capacitySnapshot(db, provider, { labsDir: path.resolve("labs") })).labs.find((l) => l.slug === slug)!;
    expect(lab).toMatchObject({
      live: 2,
      queued: 1,
      machines: 3,
      vcpus: 1,
      memoryMiB: 512,
      target: { reserve: 1, initial: 2, cap: 3 },
      ready: null,
    });
    expect(lab.fit).toBeGreaterThanOrEqual(0);
    await db.poolTarget.delete({ where: { labSlug: slug } });
  });
});

describe("watch registry", () => {
  it("counts a watcher once over their three terminals, audits once, ignores the owner, clears on leave", async () => {
    const owner = await user("watched@x.test");
    const teacher = await user("watcher@x.test", "instructor");
    const s = await db.labSession.create({ data: { learnerId: owner.id, labSlug: LAB, provider: "static", state: "ready" } });
    const bus = new EventBus({ db, databaseUrl: url, log });
    const registry = new WatchRegistry({ db, bus });
    await bus.start({ progress: () => Promise.reject(new Error("not used")), watchers: (id) => registry.watchers(id) });
    const seen: (readonly string[])[] = [];
    bus.onWatchers(s.id, (names) => seen.push(names));
    const ev = (userId: string, machine: string, attached: boolean, mode: "read" | "write" = "read") =>
      registry.onViewer({ sessionId: s.id, machine, mode, userId, attached });
    ev(owner.id, "node01", true); // the owner's own read view: not watching
    ev(owner.id, "node01", true, "write");
    for (const m of ["controlplane", "node01", "node02"]) ev(teacher.id, m, true);
    await expect.poll(() => registry.watchers(s.id)).toEqual(["watcher"]);
    // The presence row counts the teacher's read viewers: all three attaches applied.
    const presence = () => db.watchPresence.findFirst({ where: { sessionId: s.id, userId: teacher.id }, select: { viewers: true } });
    await expect.poll(presence).toEqual({ viewers: 3 });
    ev(teacher.id, "controlplane", false);
    ev(teacher.id, "node01", false);
    // Both detaches applied, one viewer left: still watching.
    await expect.poll(presence).toEqual({ viewers: 1 });
    expect(await registry.watchers(s.id)).toEqual(["watcher"]);
    ev(teacher.id, "node02", false);
    await expect.poll(() => registry.watchers(s.id)).toEqual([]);
    // What the learner's notice showed, in order: the last notice's load may come a moment after
    // the rows changed, and a notice that found nothing new repeats the previous list.
    const shown = () => seen.filter((names, i) => i === 0 || JSON.stringify(names) !== JSON.stringify(seen[i - 1]));
    await expect.poll(shown).toEqual([["watcher"], []]);
    // Attach and leave in the same tick (the attach's lookups still run first): nobody left behind.
    ev(teacher.id, "node01", true);
    ev(teacher.id, "node01", false);
    await expect.poll(() => seen.length).toBeGreaterThan(2);
    await expect.poll(() => seen.at(-1)).toEqual([]);
    expect(await registry.watchers(s.id)).toEqual([]);
    await bus.stop();
    const audit = await listAudit(db, { targetIds: [s.id] });
    expect(audit.map((a) => [a.action, a.actorId])).toEqual([
      ["session.watch", teacher.id],
      ["session.watch", teacher.id],
    ]);
  });
});
