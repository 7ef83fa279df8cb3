/**
 * Pre-provisioning and ending a cohort against real machines: sshd hosts in network namespaces
 * handed out by the static-hosts provider with exclusive allocation (one group: the second
 * learner meets NoCapacityError, as in a full class), lab setup over SSH, embedded PostgreSQL.
 * And a job cut by a restart: a child process working on it is killed -9, another runner resumes.
 */
import { spawn } from "node:child_process";
import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { log } from "../log";
import { writeStaticHostsFile } from "../testing/netns-hosts";
import { dbHostClaims, staticHostsProvider } from "../machines/static-hosts";
import type { MachineProvider } from "../machines/provider";
import { providerRefsInUse } from "../sessions/lab-sessions";
import { LEASE_MS, reconcileSessions } from "../sessions/lifecycle";
import { startTestStack, type TestStack } from "../testing/stack";
import { listAudit } from "../audit";
import { createCohort, endCohort } from "./cohorts";
import { getProvisionJob } from "./provision-jobs";
import { Provisioner } from "./provision";

const LAB = "hello-terminal";
let stack: TestStack;
let exclusive: MachineProvider;

beforeAll(async () => {
  stack = await startTestStack({ subnet: 57 });
  const file = path.join(await fs.mkdtemp(path.join(os.tmpdir(), "labdeck-excl-")), "hosts.json");
  await writeStaticHostsFile(stack.hosts, file, "exclusive");
  exclusive = staticHostsProvider({ file, groupsInUse: () => providerRefsInUse(stack.db, "static"), claims: dbHostClaims(stack.db) });
}, 180_000);
afterAll(async () => stack?.stop());

it("pre-provisions learner × lab with progress rows, reports NoCapacity by learner; ending the cohort releases the machines", async () => {
  const { db } = stack;
  const admin = await db.user.create({ data: { id: "adm", email: "adm@x.test", name: "Admin", role: "admin" } });
  const cohort = await createCohort(db, stack.labs, { name: "Full class", labs: [LAB], sessionMinutes: 45 }, admin.id);
  for (const email of ["first@x.test", "second@x.test"]) {
    const u = await db.user.create({ data: { id: email, email, name: email, role: "learner" } });
    await db.cohortMember.create({ data: { cohortId: cohort.id, userId: u.id, role: "learner" } });
  }
  const provisioner = new Provisioner({ db, provider: exclusive, labs: stack.labs, pool: stack.pool, bus: stack.bus, log });
  const started = Date.now();
  const { job, done } = await provisioner.startJob(cohort.id, admin.id);
  expect(job).toMatchObject({ state: "running", total: 2, succeeded: 0, failed: 0 });
  await expect(provisioner.startJob(cohort.id, admin.id)).rejects.toMatchObject({ code: "provisionRunning" });
  const finished = (await done)!;
  const seconds = (Date.now() - started) / 1000;
  console.log(`pre-provisioned 2 learner × lab (1 ok, 1 no capacity) in ${seconds.toFixed(1)} s`);
  expect(finished).toMatchObject({ state: "failed", total: 2, succeeded: 1, failed: 1 });
  expect(finished.failures).toEqual([expect.objectContaining({ email: "second@x.test", labSlug: LAB, code: "noCapacity" })]);
  expect(await getProvisionJob(db, job.id)).toMatchObject({ succeeded: 1, failed: 1, state: "failed" });

  const live = await db.labSession.findMany({ where: { state: "ready" }, include: { machines: true } });
  expect(live.map((s) => s.learnerId)).toEqual(["first@x.test"]);
  expect(live[0]!.machines).toHaveLength(3);
  // The cohort's limit was applied: expires 45 minutes after class starts (now: the cohort has no
  // start time), when its clocks start (lastActivityAt).
  expect(live[0]!.expiresAt!.getTime() - live[0]!.lastActivityAt.getTime()).toBe(45 * 60_000);
  expect(live[0]!.lastActivityAt.getTime()).toBeGreaterThanOrEqual(started);
  // The one group of the exclusive provider is held by that session.
  expect(await providerRefsInUse(db, "static")).toEqual(new Set([live[0]!.machines[0]!.providerRef]));

  const result = await endCohort({ db, provider: exclusive, terminals: stack.terminals, bus: stack.bus }, cohort.id, admin.id);
  expect(result).toEqual({ ended: [live[0]!.id], failed: [] });
  expect(await providerRefsInUse(db, "static")).toEqual(new Set());
  const ended = await db.labSession.findUniqueOrThrow({ where: { id: live[0]!.id } });
  expect([ended.state, ended.endReason]).toEqual(["ended", "admin"]);
  expect((await listAudit(db, { targetIds: [cohort.id] })).map((a) => a.action)).toEqual([
    "cohort.end",
    "cohort.provision",
    "cohort.create",
  ]);

  // After the end, the freed group serves the second learner again — but the cohort is over.
  await expect(provisioner.startJob(cohort.id, admin.id)).rejects.toMatchObject({ code: "cohortEnded" });
  await provisioner.stop();
}, 180_000);

it("a provisioning job cut by a restart resumes and finishes: one session per learner, job done, counts right", async () => {
  const { db } = stack;
  const admin = await db.user.create({ data: { id: "adm2", email: "adm2@x.test", name: "Admin", role: "admin" } });
  const cohort = await createCohort(db, stack.labs, { name: "Restarted class", labs: [LAB], sessionMinutes: 45 }, admin.id);
  const learners = Array.from({ length: 6 }, (_, i) => `learner${i}@restart.test`);
  for (const email of learners) {
    await db.user.create({ data: { id: email, email, name: email, role: "learner" } });
    await db.cohortMember.create({ data: { cohortId: cohort.id, userId: email, role: "learner" } });
  }
  // One learner already has a live session: the job counts it, it does not start a second.
  const before = await stack.startSession(learners[5]!, LAB);

  // Process 1 (a child) starts the job and is killed -9 once it has done a part of it.
  const hostsFile = path.join(await fs.mkdtemp(path.join(os.tmpdir(), "labdeck-shared-")), "hosts.json");
  await writeStaticHostsFile(stack.hosts, hostsFile, "shared");
  const leaseMs = 2_000;
  const args = {
    cohortId: cohort.id,
    hostsFile,
    labsDir: path.resolve("labs"),
    secretHex: stack.secret.toString("hex"),
    leaseMs,
    renewMs: 500,
  };
  const child = spawn(process.execPath, ["--import", "tsx", "server/testing/provision-child.ts", JSON.stringify(args)], {
    env: { ...process.env, DATABASE_URL: stack.databaseUrl, LOG_LEVEL: "warn" },
    stdio: ["ignore", "inherit", "inherit"],
    detached: true,
  });
  const job = () => db.provisionJob.findFirst({ where: { cohortId: cohort.id } });
  // Killed once it has done a part of the job and is in the middle of another start.
  const midJob = async () =>
    ((await job())?.succeeded ?? 0) >= 2 && (await db.labSession.count({ where: { learnerId: { in: learners }, state: "starting" } })) > 0;
  await expect.poll(midJob, { timeout: 90_000, interval: 20 }).toBe(true);
  const exited = new Promise((resolve) => child.once("exit", resolve));
  process.kill(-child.pid!, "SIGKILL");
  const killedAt = Date.now();
  await exited;
  const cut = (await job())!;
  const cutStarts = await db.labSession.count({ where: { learnerId: { in: learners }, state: "starting" } });
  expect(cutStarts).toBeGreaterThan(0);
  console.log(`killed the job's process at ${cut.succeeded}/${cut.total} done, ${cutStarts} start(s) cut in the middle`);
  expect(cut).toMatchObject({ state: "running", holder: `child:${child.pid}` });
  expect(cut.succeeded).toBeLessThan(cut.total);

  // Process 2 (this one) takes the job over once the dead holder's lease runs out.
  const provisioner = new Provisioner(
    { db, provider: stack.provider, labs: stack.labs, pool: stack.pool, bus: stack.bus, log },
    { holder: "second", leaseMs, renewMs: 500, pollMs: 250 },
  );
  provisioner.start();
  await expect.poll(async () => (await job())?.holder, { timeout: leaseMs + 10_000, interval: 50 }).toBe("second");
  const takeoverMs = Date.now() - killedAt;
  // A start cut in the middle holds its session lease (60 s) before the reconciler fails it.
  await expect.poll(async () => (await job())?.state, { timeout: 150_000, interval: 250 }).toBe("done");
  console.log(
    `job taken over ${takeoverMs} ms after kill -9 (job lease ${leaseMs} ms); finished ${((Date.now() - killedAt) / 1000).toFixed(1)} s after the kill`,
  );
  await provisioner.stop();

  const done = (await getProvisionJob(db, cut.id))!;
  expect(done).toMatchObject({ state: "done", total: 6, succeeded: 6, failed: 0, failures: [] });
  expect(await db.provisionItem.groupBy({ by: ["state"], where: { jobId: cut.id }, _count: true })).toEqual([{ state: "done", _count: 6 }]);
  // The dead process's cut starts were failed (moved to ending) by the reconciler inside the
  // resumed starts; their teardown is the reconciler's next pass (the sweeper role's), run here.
  await reconcileSessions(db, stack.provider, { now: new Date(Date.now() + LEASE_MS + 1_000) });
  const sessions = await db.labSession.findMany({ where: { learnerId: { in: learners } }, include: { machines: true } });
  const live = sessions.filter((s) => s.state !== "ended");
  expect(live.map((s) => s.learnerId).sort()).toEqual([...learners].sort());
  expect(live.every((s) => s.state === "ready" && s.machines.length === 3)).toBe(true);
  expect(live.find((s) => s.learnerId === learners[5])!.id).toBe(before);
  // Whatever the dead process left half-started was failed by the reconciler, never kept. At
  // least the starts counted after the kill: a statement the child sent just before it died
  // still runs in PostgreSQL (the dry run of 2026-12-02 counted 1, then found 2).
  const others = sessions.filter((s) => s.state === "ended");
  expect(others.length).toBeGreaterThanOrEqual(cutStarts);
  expect(others.every((s) => s.endReason === "failed")).toBe(true);
}, 240_000);
