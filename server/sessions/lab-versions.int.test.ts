/**
 * Lab versions against real sshd hosts (netns) and a real PostgreSQL: editing a lab on disk (a
 * temp lab dir) does not move a live session's learner, and its checks stay the pinned ones; new
 * sessions get the edited lab; an admin's move keeps passed step ids, drops removed ones and makes
 * the first step not passed current; sessions from before versions are backfilled by step id.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import * as labVersionRoute from "@/app/api/sessions/[id]/lab-version/route";
import { createUserWithPassword } from "../auth/users";
import { parseEnv } from "../config";
import { setServices } from "../compose/services";
import { clearLabVersionCache, currentLabVersion } from "../labs/versions";
import { startTestStack, type TestStack } from "../testing/stack";
import { moveSessionToCurrentVersion, outdatedSessions, VersionMoveError } from "./lab-versions";
import { backfillLabVersions } from "../labs/pinned";

const SLUG = "versions-test";
/** Longest wait for the catalog to re-read a lab's files, ms (server/labs/catalog.ts CATALOG_TTL_MS is 5 s; a safety bound). */
const RELOAD_TIMEOUT_MS = 30_000;

let stack: TestStack;
let labsDir: string;

type StepSpec = { id: string; check: string };
/** Writes the lab: each step's check passes when /root/lv-<flag> exists on node01 (or runs `check` as given). */
function writeLab(steps: StepSpec[]) {
  const dir = path.join(labsDir, SLUG);
  fs.rmSync(dir, { recursive: true, force: true });
  const put = (file: string, content: string, mode = 0o644) => {
    fs.mkdirSync(path.dirname(path.join(dir, file)), { recursive: true });
    fs.writeFileSync(path.join(dir, file), content, { mode });
  };
  put(
    "lab.yaml",
    [
      "title: versions",
      "summary: lab versions test",
      "durationMinutes: 5",
      "steps:",
      ...steps.map((s) => `  - { id: ${s.id}, title: step ${s.id}, machine: node01, timeoutSeconds: 5 }`),
    ].join("\n"),
  );
  put("lesson.md", "# versions\n");
  for (const s of steps) {
    put(`steps/${s.id}/step.md`, `do ${s.id}\n`);
    put(`steps/${s.id}/hint.md`, `hint ${s.id}\n`);
    put(`steps/${s.id}/check.sh`, `#!/bin/bash\n${s.check}\n`, 0o755);
    put(`steps/${s.id}/solution.sh`, "#!/bin/bash\ntrue\n", 0o755);
  }
}
const flag = (id: string): StepSpec => ({ id, check: `[ -f /root/lv-${id} ] || { echo "no lv-${id}"; exit 1; }` });

async function onNode01(command: string) {
  const host = stack.hosts.hosts.find((h) => h.name === "node01")!;
  expect((await stack.pool.run(host, command, 10)).outcome).toBe("pass");
}

/** The lab's current version once the catalog has re-read the files written over version `was`. */
async function versionAfter(was: string): Promise<string> {
  const current = async () => (await currentLabVersion(stack.db, stack.labs, SLUG)).hash;
  await expect.poll(current, { timeout: RELOAD_TIMEOUT_MS, interval: 100 }).not.toBe(was);
  return current();
}
const stateOf = async (sessionId: string) => {
  const p = await stack.grader.progress(sessionId);
  return { version: p.labVersion, steps: p.steps.map((s) => `${s.id}:${s.state}`), current: p.currentStepId, completed: p.completed };
};

beforeAll(async () => {
  labsDir = fs.mkdtempSync(path.join(os.tmpdir(), "labdeck-version-labs-"));
  writeLab([flag("a"), flag("b"), flag("c")]);
  // No background polling: every check here is one the test runs (checkNow).
  stack = await startTestStack({ subnet: 59, labsDir, grader: { intervalMs: 600_000 } });
  await onNode01("rm -f /root/lv-*");
}, 120_000);

afterAll(async () => {
  await stack?.stop();
  fs.rmSync(labsDir, { recursive: true, force: true });
});

describe("lab versions pinned per session", () => {
  let live: string;
  let v1: string;
  let v2: string;
  let v3: string;

  it("a new session pins the lab's current version and starts on its first step", async () => {
    live = await stack.startSession("learner-live", SLUG);
    const row = await stack.db.labSession.findUniqueOrThrow({ where: { id: live } });
    v1 = (await currentLabVersion(stack.db, stack.labs, SLUG)).hash;
    expect([row.labVersion, row.currentStepId]).toEqual([v1, "a"]);
    await onNode01("touch /root/lv-a");
    expect(await stack.grader.checkNow(live)).toMatchObject({ currentStepId: "b" });
  });

  it("inserting a step (and changing a check) on disk does not move the live learner; grading uses the pinned checks", async () => {
    // v2: a new step x before b, and b's check on disk now never passes.
    writeLab([flag("a"), flag("x"), { id: "b", check: 'echo "edited check"; exit 1' }, flag("c")]);
    v2 = await versionAfter(v1);
    // What another process, or this one after a restart, reads: the version's row, not the files.
    clearLabVersionCache();
    expect(await stateOf(live)).toEqual({ version: v1, steps: ["a:done", "b:current", "c:locked"], current: "b", completed: false });
    await onNode01("touch /root/lv-b");
    const after = await stack.grader.checkNow(live);
    expect(after.lastCheck).toMatchObject({ stepId: "b", outcome: "pass" });
    expect(await stateOf(live)).toEqual({ version: v1, steps: ["a:done", "b:done", "c:current"], current: "c", completed: false });
  });

  it("a session started after the edit gets the new step", async () => {
    const fresh = await stack.startSession("learner-new", SLUG);
    expect(await stateOf(fresh)).toEqual({
      version: v2,
      steps: ["a:current", "x:locked", "b:locked", "c:locked"],
      current: "a",
      completed: false,
    });
    // Graded against the new checks: a passes (its flag is there), x does not yet, b's edited check never does.
    await stack.grader.checkNow(fresh);
    expect(await stack.grader.checkNow(fresh)).toMatchObject({
      currentStepId: "x",
      lastCheck: { stepId: "x", outcome: "fail", output: "no lv-x" },
    });
    expect(await outdatedSessions(stack.db, stack.labs, SLUG)).toEqual([live]);
    await stack.db.labSession.update({ where: { id: fresh }, data: { state: "ended", endedAt: new Date() } });
  });

  it("an admin's move keeps passed step ids, drops removed steps, and makes the first step not passed current", async () => {
    // v3: b is gone, x and d are new.
    writeLab([flag("a"), flag("x"), flag("c"), flag("d")]);
    v3 = await versionAfter(v2);
    const move = await moveSessionToCurrentVersion(stack.db, stack.labs, live, "admin-1");
    expect(move).toMatchObject({ moved: true, from: v1, to: v3, kept: ["a"], dropped: ["b"], currentStepId: "x" });
    expect(await stateOf(live)).toEqual({
      version: v3,
      steps: ["a:done", "x:current", "c:locked", "d:locked"],
      current: "x",
      completed: false,
    });
    expect((await stack.db.stepCompletion.findMany({ where: { sessionId: live } })).map((c) => c.stepId)).toEqual(["a"]);
    const audit = await stack.db.auditLog.findFirstOrThrow({ where: { action: "session.labVersion", targetId: live } });
    expect(audit).toMatchObject({ actorId: "admin-1", detail: { from: v1, to: v3, kept: ["a"], dropped: ["b"], currentStepId: "x" } });
    // Grading goes on in the new version: x, then c (its flag is not there yet).
    await onNode01("touch /root/lv-x");
    expect(await stack.grader.checkNow(live)).toMatchObject({ currentStepId: "c" });
    // A second move changes nothing.
    expect(await moveSessionToCurrentVersion(stack.db, stack.labs, live, "admin-1")).toMatchObject({ moved: false, currentStepId: "c" });
    expect(await stack.db.auditLog.count({ where: { action: "session.labVersion", targetId: live } })).toBe(1);
  });

  it("a move whose new version has nothing left to pass completes the session; every step passed → no current step", async () => {
    await onNode01("touch /root/lv-c /root/lv-d");
    await stack.grader.checkNow(live);
    expect(await stack.grader.checkNow(live)).toMatchObject({ currentStepId: null, completed: true });
    writeLab([flag("a"), flag("c")]);
    await versionAfter(v3);
    expect(await moveSessionToCurrentVersion(stack.db, stack.labs, live, null)).toMatchObject({
      moved: true,
      kept: ["a", "c"],
      dropped: ["x", "d"],
      currentStepId: null,
    });
    expect(await stateOf(live)).toMatchObject({ steps: ["a:done", "c:done"], current: null, completed: true });
  });

  it("refuses ended and unknown sessions (409, 404) and changes nothing", async () => {
    const ended = await stack.db.labSession.create({
      data: { learnerId: "gone", labSlug: SLUG, provider: "static", state: "ended", labVersion: v1, currentStepId: "b" },
    });
    await expect(moveSessionToCurrentVersion(stack.db, stack.labs, ended.id, null)).rejects.toMatchObject({
      code: "sessionNotLive",
      status: 409,
    });
    await expect(moveSessionToCurrentVersion(stack.db, stack.labs, "nope", null)).rejects.toBeInstanceOf(VersionMoveError);
    expect(await stack.db.labSession.findUniqueOrThrow({ where: { id: ended.id } })).toMatchObject({ labVersion: v1, currentStepId: "b" });
  });

  it("the route answers an ended session with 409 sessionNotLive, not 500 (admin, same origin)", async () => {
    const ended = await stack.db.labSession.findFirstOrThrow({ where: { learnerId: "gone" } });
    // Signed in as an admin through the real auth: the route's own checks, as the authz matrix does.
    const env = parseEnv({ NODE_ENV: "test", LABDECK_DATA_DIR: "/nonexistent", HOST: "127.0.0.1", PORT: "3000" });
    setServices({ ...stack, env, refuseUnbuiltImage: async () => null });
    await createUserWithPassword(stack.db, stack.auth, {
      email: "admin-lv@example.test",
      name: "admin",
      role: "admin",
      password: "correct horse battery",
    });
    const signIn = await stack.auth.api.signInEmail({
      body: { email: "admin-lv@example.test", password: "correct horse battery" },
      asResponse: true,
    });
    expect(signIn.status).toBe(200);
    const cookie = signIn.headers
      .getSetCookie()
      .map((c) => c.split(";")[0])
      .join("; ");
    const res = await labVersionRoute.POST(
      new Request(`http://127.0.0.1:3000/api/sessions/${ended.id}/lab-version`, {
        method: "POST",
        headers: { cookie, origin: "http://127.0.0.1:3000" },
      }),
      { params: Promise.resolve({ id: ended.id }) },
    );
    expect([res.status, ((await res.json()) as { code: string }).code]).toEqual([409, "sessionNotLive"]);
  });
});

describe("sessions from before versions (the start-up backfill)", () => {
  it("pins them to the current lab by step id: passed steps stay, current = first not passed; completed ones stay complete", async () => {
    const { hash } = await currentLabVersion(stack.db, stack.labs, SLUG); // [a, c]
    const midway = await stack.db.labSession.create({ data: { learnerId: "old-1", labSlug: SLUG, provider: "static", state: "ready" } });
    await stack.db.stepCompletion.create({ data: { sessionId: midway.id, stepId: "a" } });
    const fresh = await stack.db.labSession.create({ data: { learnerId: "old-2", labSlug: SLUG, provider: "static", state: "suspended" } });
    const done = await stack.db.labSession.create({
      data: { learnerId: "old-3", labSlug: SLUG, provider: "static", state: "ended", completedAt: new Date() },
    });
    await stack.db.stepCompletion.createMany({
      data: [
        { sessionId: done.id, stepId: "a" },
        { sessionId: done.id, stepId: "c" },
      ],
    });
    const broken = await stack.db.labSession.create({
      data: { learnerId: "old-4", labSlug: "no-such-lab", provider: "static", state: "ended" },
    });
    const report = await backfillLabVersions(stack.db, stack.labs);
    expect(report.pinned).toBe(3);
    expect(report.failed.map((f) => f.sessionId)).toEqual([broken.id]);
    const rows = await stack.db.labSession.findMany({
      where: { id: { in: [midway.id, fresh.id, done.id, broken.id] } },
      orderBy: { learnerId: "asc" },
    });
    expect(rows.map((r) => [r.learnerId, r.labVersion, r.currentStepId])).toEqual([
      ["old-1", hash, "c"],
      ["old-2", hash, "a"],
      ["old-3", hash, null],
      ["old-4", null, null],
    ]);
    // Run again (another process starting): nothing left but the broken one.
    expect((await backfillLabVersions(stack.db, stack.labs)).pinned).toBe(0);
  });
});
