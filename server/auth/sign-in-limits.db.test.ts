/**
 * Sign-in limits through the real sign-in route (better-auth, embedded PostgreSQL): a guesser is
 * stopped, but neither 10 cookieless wrong passwords from elsewhere nor a classroom's 100 failures
 * behind one address keep the owner of an account out, nor one wrong guesser a class behind one address.
 */
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, expect, it } from "vitest";
import { parseEnv } from "../config";
import { setServices, type Services } from "../compose/services";
import { startTestDb } from "../testing/test-db";
import { createAuth } from "./auth";
import { createUserWithPassword } from "./users";
import { SIGN_IN_LIMITS } from "./sign-in-limits";
import * as authRoute from "@/app/api/auth/[...all]/route";

const ORIGIN = "http://127.0.0.1:3000";
const PASSWORD = "a long enough password";
const WRONG = "not the password at all";
let testDb: Awaited<ReturnType<typeof startTestDb>>;
let make: (email: string) => Promise<unknown>;

beforeAll(async () => {
  testDb = await startTestDb();
  const { db } = testDb;
  const auth = createAuth({ db, platformSecret: randomBytes(32), baseURL: ORIGIN });
  make = (email) => createUserWithPassword(db, auth, { email, name: email, role: "learner", password: PASSWORD });
  const env = parseEnv({ NODE_ENV: "test", LABDECK_DATA_DIR: "/nonexistent", HOST: "127.0.0.1", PORT: "3000" });
  setServices({ env, db, auth } as unknown as Services);
}, 300_000); // sign-ins hash passwords (scrypt): minutes beside three other db files and TCG guests
afterAll(async () => testDb?.stop());

/** A cookieless sign-in from `address`, as server.ts hands it to the route: the status. */
async function signIn(email: string, password: string, address: string): Promise<number> {
  const res = await authRoute.POST(
    new Request(`${ORIGIN}/api/auth/sign-in/email`, {
      method: "POST",
      headers: { "content-type": "application/json", origin: ORIGIN, "x-labdeck-client-address": address },
      body: JSON.stringify({ email, password }),
    }),
  );
  return res.status;
}

async function fail(times: number, email: (i: number) => string, address: (i: number) => string): Promise<number[]> {
  const statuses: number[] = [];
  for (let i = 0; i < times; i++) statuses.push(await signIn(email(i), WRONG, address(i)));
  return statuses;
}

it("10 cookieless wrong passwords from address A stop A at the 11th, not the owner at address B", async () => {
  await make("victim@example.test");
  expect(
    new Set(
      await fail(
        10,
        () => "victim@example.test",
        () => "192.0.2.1",
      ),
    ),
  ).toEqual(new Set([401]));
  expect(await signIn("victim@example.test", PASSWORD, "192.0.2.1")).toBe(429);
  expect(await signIn("victim@example.test", PASSWORD, "192.0.2.2")).toBe(200);
}, 300_000);

it("100 failures behind one address do not stop a student who signed in from there before; a newcomer there waits", async () => {
  const nat = "198.51.100.7";
  await make("known@example.test");
  await make("newcomer@example.test");
  expect(await signIn("known@example.test", PASSWORD, nat)).toBe(200);
  const statuses = await fail(
    SIGN_IN_LIMITS.signInAddress.points,
    (i) => `classmate-${i % 20}@example.test`,
    () => nat,
  );
  expect(new Set(statuses)).toEqual(new Set([401]));
  expect(await signIn("known@example.test", PASSWORD, nat)).toBe(200);
  expect(await signIn("newcomer@example.test", PASSWORD, nat)).toBe(429);
  // The newcomer elsewhere is not held back by the classroom's address.
  expect(await signIn("newcomer@example.test", PASSWORD, "198.51.100.8")).toBe(200);
}, 300_000); // sign-ins hash passwords (scrypt): minutes beside three other db files and TCG guests

it("a guesser is stopped: 10 per address, and past 50 over all addresses only known pairs get in", async () => {
  await make("target@example.test");
  expect(await signIn("target@example.test", PASSWORD, "203.0.113.1")).toBe(200);
  // Successes do not count: the owner signs in again and again.
  for (let i = 0; i < 12; i++) expect(await signIn("target@example.test", PASSWORD, "203.0.113.1")).toBe(200);
  const statuses = await fail(
    SIGN_IN_LIMITS.signInAccount.points,
    () => "target@example.test",
    (i) => `203.0.113.${10 + Math.floor(i / 10)}`,
  );
  expect(new Set(statuses)).toEqual(new Set([401]));
  // Each guessing address is spent, even with the right password; a fresh one is refused too.
  expect(await signIn("target@example.test", PASSWORD, "203.0.113.10")).toBe(429);
  expect(await signIn("target@example.test", WRONG, "203.0.113.99")).toBe(429);
  expect(await signIn("target@example.test", PASSWORD, "203.0.113.99")).toBe(429);
  // The owner's known pair goes through the lock others caused.
  expect(await signIn("target@example.test", PASSWORD, "203.0.113.1")).toBe(200);
}, 300_000); // sign-ins hash passwords (scrypt): minutes beside three other db files and TCG guests

it("a class of 40 behind one address all sign in, each for the first time, while one of them keeps guessing wrong", async () => {
  const nat = "198.51.100.40";
  const classmates = Array.from({ length: 40 }, (_, i) => `student-${i}@example.test`);
  for (const email of classmates) await make(email);
  // One student mistypes (or guesses) well past the per-account limit, from the classroom.
  const guesses = await fail(
    SIGN_IN_LIMITS.signInPair.points + 5,
    () => classmates[0]!,
    () => nat,
  );
  expect(guesses.filter((s) => s === 429).length).toBeGreaterThan(0); // that pair is stopped
  const statuses = await Promise.all(classmates.slice(1).map((email) => signIn(email, PASSWORD, nat)));
  expect(statuses).toEqual(classmates.slice(1).map(() => 200));
}, 300_000); // sign-ins hash passwords (scrypt): minutes beside three other db files and TCG guests
