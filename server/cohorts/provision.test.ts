/**
 * Pre-provisioning and ending a cohort against real machines: sshd hosts in network namespaces
 * handed out by the static-hosts provider with exclusive allocation (one group: the second
 * learner meets NoCapacityError, as in a full class), lab setup over SSH, embedded PostgreSQL.
 */
import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { writeStaticHostsFile } from "../machines/netns-hosts";
import { dbHostClaims, staticHostsProvider } from "../machines/static-hosts";
import type { MachineProvider } from "../machines/provider";
import { providerRefsInUse } from "../sessions/lab-sessions";
import { startTestStack, type TestStack } from "../testing/stack";
import { listAudit } from "./audit";
import { createCohort, endCohort } from "./cohorts";
import { getProvisionJob } from "./provision-jobs";
import { startProvisionJob } from "./provision";

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
  const deps = { db, provider: exclusive, labs: stack.labs, pool: stack.pool, bus: stack.bus };
  const started = Date.now();
  const { job, done } = await startProvisionJob(deps, cohort.id, admin.id);
  expect(job).toMatchObject({ state: "running", total: 2, succeeded: 0, failed: 0 });
  await expect(startProvisionJob(deps, cohort.id, admin.id)).rejects.toMatchObject({ code: "provisionRunning" });
  const finished = await done;
  const seconds = (Date.now() - started) / 1000;
  console.log(`pre-provisioned 2 learner × lab (1 ok, 1 no capacity) in ${seconds.toFixed(1)} s`);
  expect(finished).toMatchObject({ state: "failed", total: 2, succeeded: 1, failed: 1 });
  expect(finished.failures).toEqual([expect.objectContaining({ email: "second@x.test", labSlug: LAB, code: "noCapacity" })]);
  expect(await getProvisionJob(db, job.id)).toMatchObject({ succeeded: 1, failed: 1, state: "failed" });

  const live = await db.labSession.findMany({ where: { state: "ready" }, include: { machines: true } });
  expect(live.map((s) => s.learnerId)).toEqual(["first@x.test"]);
  expect(live[0]!.machines).toHaveLength(3);
  // The cohort's limit was applied: expires ~45 minutes after start.
  expect(live[0]!.expiresAt!.getTime() - started).toBeGreaterThan(44 * 60_000);
  // The one group of the exclusive provider is held by that session.
  expect(await providerRefsInUse(db, "static")).toEqual(new Set([live[0]!.machines[0]!.providerRef]));

  const result = await endCohort({ db, provider: exclusive, terminals: stack.terminals, bus: stack.bus }, cohort.id, admin.id);
  expect(result).toEqual({ ended: [live[0]!.id], failed: [] });
  expect(await providerRefsInUse(db, "static")).toEqual(new Set());
  const ended = await db.labSession.findUniqueOrThrow({ where: { id: live[0]!.id } });
  expect([ended.state, ended.endReason]).toEqual(["ended", "admin"]);
  expect((await listAudit(db, { targetIds: [cohort.id] })).map((a) => a.action)).toEqual(["cohort.end", "cohort.provision", "cohort.create"]);

  // After the end, the freed group serves the second learner again — but the cohort is over.
  await expect(startProvisionJob(deps, cohort.id, admin.id)).rejects.toMatchObject({ code: "cohortEnded" });
}, 180_000);
