/**
 * Accounts and the authorization rules as plain functions, against a real embedded PostgreSQL
 * with the committed migrations and real better-auth (no sshd, no HTTP).
 */
import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ZodError } from "zod";
import { createDb, type Db } from "../db/client";
import { startEmbeddedPostgres, type EmbeddedDatabase } from "../db/embedded";
import { migrateDeploy } from "../db/migrate";
import { freePort } from "../testing/stack";
import { createAuth, type Auth } from "./auth";
import { sessionAccess, teaches, type CurrentUser } from "./guard";
import { acceptInvitation, createInvitation, ensureFirstAdmin, findOpenInvitation, InvitationInvalidError } from "./invitations";
import { createUserWithPassword, EmailTakenError } from "./users";

const PASSWORD = "a long enough password";
let dir: string;
let embedded: EmbeddedDatabase;
let db: Db;
let auth: Auth;

beforeAll(async () => {
  dir = await fs.mkdtemp(path.join(os.tmpdir(), "labdeck-users-"));
  await fs.chmod(dir, 0o711);
  embedded = await startEmbeddedPostgres(path.join(dir, "data"), await freePort());
  await migrateDeploy(embedded.url);
  db = createDb(embedded.url);
  auth = createAuth({ db, platformSecret: randomBytes(32), baseURL: "http://127.0.0.1:3000" });
}, 120_000);

afterAll(async () => {
  await db?.$disconnect();
  await embedded?.stop();
  await fs.rm(dir, { recursive: true, force: true });
});

async function signInWorks(email: string, password: string): Promise<boolean> {
  const res = await auth.api.signInEmail({ body: { email, password }, asResponse: true });
  return res.status === 200;
}

describe("first admin", () => {
  it("gets a one-time link, no password: it sets the password once, expires, and a restart's new link replaces it", async () => {
    const first = await ensureFirstAdmin(db, "boss@example.test");
    expect(first).not.toBeNull();
    expect(first!.token).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(JSON.stringify(first)).not.toMatch(/password/i);
    expect(first!.expiresAt.getTime() - Date.now()).toBeLessThanOrEqual(24 * 60 * 60 * 1000);
    // No account yet: nobody can sign in as the admin until the link is used.
    expect(await db.user.count({ where: { role: "admin" } })).toBe(0);
    // A restart before it is used: a new link, the old one no longer works.
    const second = await ensureFirstAdmin(db, "boss@example.test");
    expect(second!.token).not.toBe(first!.token);
    expect(await findOpenInvitation(db, first!.token)).toBeNull();
    await expect(acceptInvitation(db, auth, { token: first!.token, name: "Boss", password: PASSWORD })).rejects.toBeInstanceOf(
      InvitationInvalidError,
    );
    // Expired: a day and a bit later the link is refused.
    const later = new Date(Date.now() + 25 * 60 * 60 * 1000);
    await expect(acceptInvitation(db, auth, { token: second!.token, name: "Boss", password: PASSWORD }, later)).rejects.toBeInstanceOf(
      InvitationInvalidError,
    );
    // Used in time: the admin exists with the password they chose, stored only as a hash.
    const admin = await acceptInvitation(db, auth, { token: second!.token, name: "Boss", password: PASSWORD });
    expect(admin).toMatchObject({ email: "boss@example.test", role: "admin" });
    const user = await db.user.findUniqueOrThrow({ where: { email: "boss@example.test" }, include: { accounts: true } });
    expect(user.accounts[0]!.password).not.toContain(PASSWORD);
    expect(await signInWorks("boss@example.test", PASSWORD)).toBe(true);
    expect(await signInWorks("boss@example.test", "wrong password here")).toBe(false);
    // One use only; and once an admin exists, no more links.
    await expect(acceptInvitation(db, auth, { token: second!.token, name: "Again", password: PASSWORD })).rejects.toBeInstanceOf(
      InvitationInvalidError,
    );
    expect(await ensureFirstAdmin(db, "boss@example.test")).toBeNull();
    expect(await ensureFirstAdmin(db, "other@example.test")).toBeNull();
  });
});

describe("users", () => {
  it("refuses a taken email (any case) and bad input, changing nothing", async () => {
    await createUserWithPassword(db, auth, { email: "taken@example.test", name: "T", role: "learner", password: PASSWORD });
    await expect(
      createUserWithPassword(db, auth, { email: "TAKEN@example.test", name: "T", role: "learner", password: PASSWORD }),
    ).rejects.toBeInstanceOf(EmailTakenError);
    const before = await db.user.count();
    await expect(
      createUserWithPassword(db, auth, { email: "short@example.test", name: "S", role: "learner", password: "short" }),
    ).rejects.toBeInstanceOf(ZodError);
    await expect(
      createUserWithPassword(db, auth, { email: "not-an-email", name: "S", role: "learner", password: PASSWORD }),
    ).rejects.toBeInstanceOf(ZodError);
    expect(await db.user.count()).toBe(before);
  });
});

describe("invitations", () => {
  it("one link, two concurrent accepts: exactly one account", async () => {
    const { token } = await createInvitation(db, { email: "race@example.test", role: "learner" }, null);
    const results = await Promise.allSettled([
      acceptInvitation(db, auth, { token, name: "A", password: PASSWORD }),
      acceptInvitation(db, auth, { token, name: "B", password: PASSWORD }),
    ]);
    expect(results.filter((r) => r.status === "fulfilled")).toHaveLength(1);
    const rejected = results.find((r) => r.status === "rejected") as PromiseRejectedResult;
    expect(rejected.reason).toBeInstanceOf(InvitationInvalidError);
    expect(await db.user.count({ where: { email: "race@example.test" } })).toBe(1);
    expect(await findOpenInvitation(db, token)).toBeNull();
  });

  it("an invitation for a taken email stays open and makes nothing", async () => {
    const { token } = await createInvitation(db, { email: "taken@example.test", role: "admin" }, null);
    await expect(acceptInvitation(db, auth, { token, name: "X", password: PASSWORD })).rejects.toBeInstanceOf(EmailTakenError);
    expect(await findOpenInvitation(db, token)).not.toBeNull();
    expect((await db.user.findUniqueOrThrow({ where: { email: "taken@example.test" } })).role).toBe("learner");
  });

  it("with a cohort, the new user joins it in the invitation's role", async () => {
    const cohort = await db.cohort.create({ data: { name: "Invited cohort" } });
    const { token } = await createInvitation(db, { email: "teacher@example.test", role: "instructor", cohortId: cohort.id }, null);
    const user = await acceptInvitation(db, auth, { token, name: "Teacher", password: PASSWORD });
    expect(await db.cohortMember.findUnique({ where: { cohortId_userId: { cohortId: cohort.id, userId: user.id } } })).toMatchObject({
      role: "instructor",
    });
  });

  it("stores only the token's hash", async () => {
    const { token, invitation } = await createInvitation(db, { email: "hash@example.test", role: "learner" }, null);
    const row = await db.invitation.findUniqueOrThrow({ where: { id: invitation.id } });
    expect(row.tokenHash).not.toContain(token);
    expect(JSON.stringify(row)).not.toContain(token);
  });
});

describe("sessionAccess and teaches", () => {
  it("owner / watch / null by role and cohort", async () => {
    const mk = async (key: string, role: "learner" | "instructor" | "admin"): Promise<CurrentUser> => {
      const u = await createUserWithPassword(db, auth, { email: `${key}@access.test`, name: key, role, password: PASSWORD });
      return u;
    };
    const learner = await mk("learner", "learner");
    const stranger = await mk("stranger", "learner");
    const teacher = await mk("teacher", "instructor");
    const otherTeacher = await mk("other-teacher", "instructor");
    const admin = await mk("admin", "admin");
    // An instructor who is a *learner* in the cohort does not get to watch.
    const coLearner = await mk("co-learner", "instructor");
    const cohort = await db.cohort.create({ data: { name: "C" } });
    await db.cohortMember.createMany({
      data: [
        { cohortId: cohort.id, userId: learner.id, role: "learner" },
        { cohortId: cohort.id, userId: teacher.id, role: "instructor" },
        { cohortId: cohort.id, userId: coLearner.id, role: "learner" },
      ],
    });
    const session = await db.labSession.create({ data: { labSlug: "x", learnerId: learner.id, provider: "static" } });
    expect(await teaches(db, teacher.id, learner.id)).toBe(true);
    expect(await teaches(db, otherTeacher.id, learner.id)).toBe(false);
    expect(await teaches(db, coLearner.id, learner.id)).toBe(false);
    expect(await teaches(db, learner.id, teacher.id)).toBe(false);
    expect(await sessionAccess(db, learner, session.id)).toBe("owner");
    expect(await sessionAccess(db, stranger, session.id)).toBeNull();
    expect(await sessionAccess(db, teacher, session.id)).toBe("watch");
    expect(await sessionAccess(db, otherTeacher, session.id)).toBeNull();
    expect(await sessionAccess(db, coLearner, session.id)).toBeNull();
    expect(await sessionAccess(db, admin, session.id)).toBe("watch");
    expect(await sessionAccess(db, admin, "no-such-session")).toBeNull();
    // Leaving the cohort ends watching.
    await db.cohortMember.delete({ where: { cohortId_userId: { cohortId: cohort.id, userId: learner.id } } });
    expect(await sessionAccess(db, teacher, session.id)).toBeNull();
  });
});
