/**
 * GET /api/sessions/:id/terminal-tokens by session state: the owner gets write tokens while the
 * session is in use and read-only tokens once it is ending or ended (real better-auth sign-in,
 * embedded PostgreSQL, the real route handler).
 */
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, expect, it } from "vitest";
import { parseEnv } from "../config";
import { createAuth } from "../auth/auth";
import { createUserWithPassword } from "../auth/users";
import { setServices, type Services } from "../compose/services";
import { signInCookie } from "../testing/sign-in";
import { startTestDb } from "../testing/test-db";
import { tokenMode, verifyTerminalToken } from "./token";
import * as tokensRoute from "@/app/api/sessions/[id]/terminal-tokens/route";

const ORIGIN = "http://127.0.0.1:3000";
const PASSWORD = "a long enough password";
const secret = randomBytes(32);
let testDb: Awaited<ReturnType<typeof startTestDb>>;
let cookie: string;
let learnerId: string;

beforeAll(async () => {
  testDb = await startTestDb();
  const { db } = testDb;
  const auth = createAuth({ db, platformSecret: randomBytes(32), baseURL: ORIGIN });
  const learner = await createUserWithPassword(db, auth, { email: "l@example.test", name: "L", role: "learner", password: PASSWORD });
  learnerId = learner.id;
  cookie = await signInCookie(auth, "l@example.test", PASSWORD);
  const env = parseEnv({ NODE_ENV: "test", LABDECK_DATA_DIR: "/nonexistent", HOST: "127.0.0.1", PORT: "3000" });
  setServices({ env, db, auth, secret } as unknown as Services);
}, 120_000);
afterAll(async () => testDb?.stop());

it("tokenMode: write only for the owner of a session still in use", () => {
  for (const state of ["starting", "ready", "suspended"] as const) expect(tokenMode("owner", state)).toBe("write");
  for (const state of ["ending", "ended"] as const) expect(tokenMode("owner", state)).toBe("read");
  expect(tokenMode("watch", "ready")).toBe("read");
});

it("the owner of an ending or ended session gets read-only tokens; of a ready one, write tokens", async () => {
  for (const state of ["ready", "ending", "ended"] as const) {
    const session = await testDb.db.labSession.create({
      data: {
        labSlug: "hello-terminal",
        learnerId,
        provider: "static",
        state,
        machines: { create: { name: "web", host: "10.0.0.1", port: 22, user: "lab", privateKey: "-", hostKey: "-", providerRef: "g" } },
      },
    });
    const res = await tokensRoute.GET(new Request(`${ORIGIN}/api/sessions/${session.id}/terminal-tokens`, { headers: { cookie } }), {
      params: Promise.resolve({ id: session.id }),
    });
    expect(res.status).toBe(200);
    const body = (await res.json()) as { mode: string; machines: { token: string }[] };
    const expected = state === "ready" ? "write" : "read";
    expect(body.mode).toBe(expected);
    expect(verifyTerminalToken(secret, body.machines[0]!.token)?.mode).toBe(expected);
  }
});
