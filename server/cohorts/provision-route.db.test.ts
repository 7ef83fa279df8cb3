/**
 * POST /api/cohorts/:id/provision as the server runs it: the Provisioner in services comes from
 * another module graph than the route (server.ts's bundle against Next's route bundle), simulated
 * here by loading it after vi.resetModules(). Its error classes are then not the route's, so a
 * refusal it threw answered 500; the route makes the job itself and answers 404 / 409.
 */
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, expect, it, vi } from "vitest";
import { parseEnv } from "../config";
import { createAuth } from "../auth/auth";
import { createUserWithPassword } from "../auth/users";
import { setServices, type Services } from "../compose/services";
import { log } from "../log";
import { signInCookie } from "../testing/sign-in";
import { startTestDb } from "../testing/test-db";
import * as provisionRoute from "@/app/api/cohorts/[id]/provision/route";

const ORIGIN = "http://127.0.0.1:3000";
const PASSWORD = "a long enough password";
let testDb: Awaited<ReturnType<typeof startTestDb>>;
let cookie: string;

beforeAll(async () => {
  testDb = await startTestDb();
  const { db } = testDb;
  const auth = createAuth({ db, platformSecret: randomBytes(32), baseURL: ORIGIN });
  await createUserWithPassword(db, auth, { email: "admin@example.test", name: "Admin", role: "admin", password: PASSWORD });
  cookie = await signInCookie(auth, "admin@example.test", PASSWORD);
  vi.resetModules();
  const { Provisioner } = await import("./provision");
  const provisioner = new Provisioner({ db, log } as ConstructorParameters<typeof Provisioner>[0]);
  const env = parseEnv({ NODE_ENV: "test", LABDECK_DATA_DIR: "/nonexistent", HOST: "127.0.0.1", PORT: "3000" });
  setServices({ env, db, auth, provisioner } as unknown as Services);
}, 120_000);
afterAll(async () => testDb?.stop());

const post = (id: string) =>
  provisionRoute.POST(new Request(`${ORIGIN}/api/cohorts/${id}/provision`, { method: "POST", headers: { cookie, origin: ORIGIN } }), {
    params: Promise.resolve({ id }),
  });

it("answers 404 noSuchCohort for an unknown cohort, 409 for an ended one, 202 for an empty one", async () => {
  for (const id of ["cunknowncohort0000000000", "not-an-id"]) {
    const res = await post(id);
    expect(res.status).toBe(404);
    expect(await res.json()).toMatchObject({ code: "noSuchCohort", error: expect.any(String) });
  }
  const ended = await testDb.db.cohort.create({ data: { name: "Over", endedAt: new Date() } });
  const refused = await post(ended.id);
  expect(refused.status).toBe(409);
  expect(await refused.json()).toMatchObject({ code: "cohortEnded" });
  const empty = await testDb.db.cohort.create({ data: { name: "Empty" } });
  const res = await post(empty.id);
  expect(res.status).toBe(202);
  expect(await res.json()).toMatchObject({ job: { state: "done", total: 0 } });
});
