/**
 * Cohort members with existing accounts and invitation links, on a real embedded PostgreSQL:
 * adding by email (member at once, or an invitation), CSV rows with accounts, an existing account
 * joining by its link (and nobody else consuming it), removal (audited), invitations listed with
 * their links (sealed at rest), revocation.
 */
import { randomBytes } from "node:crypto";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  acceptInvitation,
  createInvitation,
  findOpenInvitation,
  InvitationInvalidError,
  invitationLinks,
  listInvitations,
  revokeInvitation,
} from "../auth/invitations";
import { createAuth, type Auth } from "../auth/auth";
import type { Db } from "../db/client";
import { LabCatalog } from "../labs/catalog";
import { openSecret, sealSecret } from "../secret";
import { startTestDb } from "../testing/test-db";
import { listAudit } from "../audit";
import { cohortMembers, createCohort, MemberNotFoundError, removeMember } from "./cohorts";
import { importCohortCsv } from "./csv-import";
import { addMemberByEmail, InvitationForAnotherAccountError, joinWithInvitation } from "./members";

const LAB = "hello-terminal";
const PASSWORD = "correct horse battery";
let db: Db;
let auth: Auth;
let stop: () => Promise<void>;
const labs = new LabCatalog(path.resolve("labs"));
const secret = randomBytes(32);
const links = invitationLinks(secret, "http://labs.test");
const tokenOf = (url: string | null) => url!.slice(url!.lastIndexOf("/") + 1);

async function user(email: string, role: "learner" | "instructor" | "admin" = "learner") {
  return db.user.create({ data: { id: email, email, name: email.split("@")[0]!, role } });
}

beforeAll(async () => {
  ({ db, stop } = await startTestDb());
  auth = createAuth({ db, platformSecret: secret, baseURL: "http://127.0.0.1" });
}, 60_000);
afterAll(async () => stop?.());

describe("sealed tokens (server/secret.ts)", () => {
  it("open what was sealed; another secret or purpose, or a changed byte, opens nothing", () => {
    const sealed = sealSecret(secret, "p", "the token");
    expect(sealed).not.toContain("the token");
    expect(openSecret(secret, "p", sealed)).toBe("the token");
    expect(sealSecret(secret, "p", "the token")).not.toBe(sealed); // fresh IV each time
    expect(openSecret(randomBytes(32), "p", sealed)).toBeNull();
    expect(openSecret(secret, "other", sealed)).toBeNull();
    const raw = Buffer.from(sealed, "base64url");
    raw[raw.length - 1]! ^= 1;
    expect(openSecret(secret, "p", raw.toString("base64url"))).toBeNull();
    expect(openSecret(secret, "p", "short")).toBeNull();
  });
});

describe("add a member by email", () => {
  it("an existing account becomes a member at once with the role given; twice is 'alreadyMember'; audited", async () => {
    const c = await createCohort(db, labs, { name: "By email", labs: [LAB] }, null);
    const learner = await user("existing1@x.test");
    const teacher = await user("teacher-m1@x.test", "instructor");
    const first = await addMemberByEmail(db, links, c.id, { email: "EXISTING1@x.test", role: "learner" }, "admin-x");
    expect(first).toMatchObject({ outcome: "added", member: { userId: learner.id, role: "learner" } });
    expect((await addMemberByEmail(db, links, c.id, { email: learner.email, role: "learner" }, "admin-x")).outcome).toBe("alreadyMember");
    expect((await addMemberByEmail(db, links, c.id, { email: teacher.email, role: "instructor" }, "admin-x")).outcome).toBe("added");
    await expect(addMemberByEmail(db, links, c.id, { email: teacher.email, role: "learner" }, null)).rejects.toMatchObject({
      code: "wrongUserRole",
    });
    const { members } = await cohortMembers(db, c.id);
    expect(members.map((m) => [m.email, m.role])).toEqual([
      [learner.email, "learner"],
      [teacher.email, "instructor"],
    ]);
    const adds = (await listAudit(db, { targetIds: [c.id] })).filter((a) => a.action === "cohort.member.add");
    expect(adds).toHaveLength(2);
    expect(await db.invitation.count({ where: { cohortId: c.id } })).toBe(0);
  });

  it("an unknown email gets an invitation bound to the cohort, listed with its link; the token is never stored in plain text", async () => {
    const c = await createCohort(db, labs, { name: "Invite by email" }, null);
    const result = await addMemberByEmail(db, links, c.id, { email: "new-m@x.test", role: "learner" }, null);
    if (result.outcome !== "invited") throw new Error(`expected an invitation, got ${result.outcome}`);
    expect(result.invitation.url).toMatch(/^http:\/\/labs\.test\/invite\/[A-Za-z0-9_-]{43}$/);
    const token = tokenOf(result.invitation.url);
    const row = await db.invitation.findUniqueOrThrow({ where: { id: result.invitation.id } });
    expect(JSON.stringify(row)).not.toContain(token);
    expect(row.tokenSealed).toBeTruthy();
    const listed = await listInvitations(db, links, { cohortId: c.id, openOnly: true });
    expect(listed.map((i) => [i.email, i.url])).toEqual([["new-m@x.test", result.invitation.url]]);
    // Under another secret the link cannot be recovered (listed, but without a link).
    const other = await listInvitations(db, invitationLinks(randomBytes(32), "http://labs.test"), { cohortId: c.id });
    expect(other.map((i) => [i.open, i.url])).toEqual([[true, null]]);
  });

  it("refuses an ended cohort and bad input", async () => {
    const c = await createCohort(db, labs, { name: "Ended" }, null);
    await db.cohort.update({ where: { id: c.id }, data: { endedAt: new Date() } });
    await expect(addMemberByEmail(db, links, c.id, { email: "x@x.test", role: "learner" }, null)).rejects.toMatchObject({
      code: "cohortEnded",
    });
    await expect(addMemberByEmail(db, links, c.id, { email: "not-an-email", role: "learner" }, null)).rejects.toThrow();
    await expect(addMemberByEmail(db, links, "no-such-cohort", { email: "x@x.test", role: "learner" }, null)).rejects.toMatchObject({
      code: "noSuchCohort",
    });
  });
});

describe("CSV import with existing accounts", () => {
  it("counts invited / added existing / already member / bad rows by line, all in one transaction", async () => {
    const c = await createCohort(db, labs, { name: "CSV existing", labs: [LAB] }, null);
    await user("csv-old@x.test");
    await user("csv-member@x.test");
    await user("csv-teacher@x.test", "instructor");
    await db.cohortMember.create({ data: { cohortId: c.id, userId: "csv-member@x.test", role: "learner" } });
    // An open invitation to ANOTHER cohort does not stop this one's.
    const elsewhere = await createCohort(db, labs, { name: "Elsewhere" }, null);
    await createInvitation(db, { email: "csv-new@x.test", role: "learner", cohortId: elsewhere.id }, null, { secret });
    const csv = [
      "email,name,role",
      "csv-new@x.test,New",
      "csv-old@x.test,Old",
      "csv-member@x.test,Member",
      "csv-teacher@x.test,Teacher,learner",
      "bad,row",
    ].join("\n");
    const admin = await user("admin-csv@x.test", "admin");
    const report = await importCohortCsv(db, c.id, csv, admin.id, links);
    expect(report.invited.map((r) => [r.line, r.email])).toEqual([[2, "csv-new@x.test"]]);
    expect(report.added.map((r) => [r.line, r.email])).toEqual([[3, "csv-old@x.test"]]);
    expect(report.alreadyMembers.map((r) => [r.line, r.email])).toEqual([[4, "csv-member@x.test"]]);
    expect(report.problems.map((p) => [p.line, p.code])).toEqual([
      [5, "wrongRole"],
      [6, "email"],
    ]);
    expect((await cohortMembers(db, c.id)).members.map((m) => m.email).sort()).toEqual(["csv-member@x.test", "csv-old@x.test"]);
    const listed = await listInvitations(db, links, { cohortId: c.id, openOnly: true });
    expect(listed.map((i) => i.url)).toEqual([report.invited[0]!.url]);
    const audit = (await listAudit(db, { targetIds: [c.id] })).find((a) => a.action === "cohort.import");
    expect(audit?.detail).toMatchObject({ invited: 1, added: 1, alreadyMembers: 1, problems: 2 });
  });
});

describe("an existing account and an invitation link", () => {
  async function cohortInvitation(email: string, role: "learner" | "instructor" = "learner") {
    const c = await createCohort(db, labs, { name: `Join ${email}`, labs: [LAB] }, null);
    const { token, invitation } = await createInvitation(db, { email, role, cohortId: c.id }, null, { secret });
    return { cohortId: c.id, token, invitationId: invitation.id };
  }

  it("signed in as the invitation's email, joins the cohort; the link is then used; no second account", async () => {
    const me = await user("joiner@x.test");
    const { cohortId, token } = await cohortInvitation(me.email);
    // Making a new account with this link is refused (the email has one), and the link stays open.
    await expect(acceptInvitation(db, auth, { token, name: "Again", password: PASSWORD })).rejects.toThrow(/already exists/);
    expect(await findOpenInvitation(db, token)).not.toBeNull();
    const joined = await joinWithInvitation(db, { id: me.id, email: me.email, role: "learner" }, token);
    expect(joined).toEqual({ cohortId, role: "learner", alreadyMember: false });
    expect((await cohortMembers(db, cohortId)).members.map((m) => m.userId)).toEqual([me.id]);
    expect((await cohortMembers(db, cohortId)).pending).toEqual([]);
    expect(await findOpenInvitation(db, token)).toBeNull();
    expect(await db.user.count({ where: { email: me.email } })).toBe(1);
    await expect(joinWithInvitation(db, { id: me.id, email: me.email, role: "learner" }, token)).rejects.toBeInstanceOf(
      InvitationInvalidError,
    );
    const audit = (await listAudit(db, { targetIds: [cohortId] })).find((a) => a.action === "cohort.member.add");
    expect(audit).toMatchObject({ actorId: me.id, detail: { via: "invitation" } });
  });

  it("a signed-in user with another email cannot consume someone else's invitation (it stays open)", async () => {
    const owner = await user("owner-j@x.test");
    const thief = await user("thief-j@x.test");
    const { cohortId, token } = await cohortInvitation(owner.email);
    await expect(joinWithInvitation(db, { id: thief.id, email: thief.email, role: "learner" }, token)).rejects.toBeInstanceOf(
      InvitationForAnotherAccountError,
    );
    expect(await findOpenInvitation(db, token)).not.toBeNull();
    expect((await cohortMembers(db, cohortId)).members).toEqual([]);
  });

  it("the account's role must be the invitation's; ended cohorts and admin invitations give nothing to join", async () => {
    const teacher = await user("role-j@x.test", "instructor");
    const { token } = await cohortInvitation(teacher.email, "learner");
    await expect(joinWithInvitation(db, { id: teacher.id, email: teacher.email, role: "instructor" }, token)).rejects.toMatchObject({
      code: "wrongUserRole",
    });
    const late = await user("ended-j@x.test");
    const ended = await cohortInvitation(late.email);
    await db.cohort.update({ where: { id: ended.cohortId }, data: { endedAt: new Date() } });
    await expect(joinWithInvitation(db, { id: late.id, email: late.email, role: "learner" }, ended.token)).rejects.toMatchObject({
      code: "cohortEnded",
    });
    const plain = await createInvitation(db, { email: late.email, role: "learner" }, null, { secret });
    await expect(joinWithInvitation(db, { id: late.id, email: late.email, role: "learner" }, plain.token)).rejects.toThrow(
      /already exists/,
    );
    await expect(joinWithInvitation(db, { id: late.id, email: late.email, role: "learner" }, "nope")).rejects.toBeInstanceOf(
      InvitationInvalidError,
    );
  });

  it("adding the person another way closes their open invitation to the cohort (no 'invited' row forever)", async () => {
    const me = await user("closed-j@x.test");
    const { cohortId, token } = await cohortInvitation(me.email);
    await addMemberByEmail(db, links, cohortId, { email: me.email, role: "learner" }, null);
    expect(await findOpenInvitation(db, token)).toBeNull();
    expect((await cohortMembers(db, cohortId)).pending).toEqual([]);
  });
});

describe("revoking invitations", () => {
  it("a revoked invitation can no longer be accepted or joined, and is not listed as open; audited on its cohort", async () => {
    const c = await createCohort(db, labs, { name: "Revoke" }, null);
    const fresh = await createInvitation(db, { email: "revoked-new@x.test", role: "learner", cohortId: c.id }, null, { secret });
    const existing = await user("revoked-old@x.test");
    const forExisting = await createInvitation(db, { email: existing.email, role: "learner", cohortId: c.id }, null, { secret });
    expect(await revokeInvitation(db, fresh.invitation.id, "admin-r")).toBe(true);
    expect(await revokeInvitation(db, forExisting.invitation.id, "admin-r")).toBe(true);
    expect(await revokeInvitation(db, fresh.invitation.id, "admin-r")).toBe(false);
    expect(await revokeInvitation(db, "no-such-id", "admin-r")).toBe(false);
    expect(await revokeInvitation(db, "bad\u0000id", "admin-r")).toBe(false);
    await expect(acceptInvitation(db, auth, { token: fresh.token, name: "Late", password: PASSWORD })).rejects.toBeInstanceOf(
      InvitationInvalidError,
    );
    expect(await db.user.findUnique({ where: { email: "revoked-new@x.test" } })).toBeNull();
    await expect(
      joinWithInvitation(db, { id: existing.id, email: existing.email, role: "learner" }, forExisting.token),
    ).rejects.toBeInstanceOf(InvitationInvalidError);
    expect(await findOpenInvitation(db, fresh.token)).toBeNull();
    expect(await listInvitations(db, links, { cohortId: c.id, openOnly: true })).toEqual([]);
    const all = await listInvitations(db, links, { cohortId: c.id });
    expect(all.map((i) => [i.open, i.url, i.revokedAt !== null])).toEqual([
      [false, null, true],
      [false, null, true],
    ]);
    expect((await cohortMembers(db, c.id)).pending).toEqual([]);
    const revokes = (await listAudit(db, { targetIds: [c.id] })).filter((a) => a.action === "invitation.revoke");
    expect(revokes).toHaveLength(2);
  });

  it("a used invitation cannot be revoked", async () => {
    const { token, invitation } = await createInvitation(db, { email: "used-r@x.test", role: "learner" }, null, { secret });
    await acceptInvitation(db, auth, { token, name: "Used", password: PASSWORD });
    expect(await revokeInvitation(db, invitation.id, null)).toBe(false);
  });
});

describe("removing members", () => {
  it("removes a learner and an instructor, audited with the role; a non-member is MemberNotFoundError", async () => {
    const c = await createCohort(db, labs, { name: "Remove" }, null);
    const learner = await user("rm-learner@x.test");
    const teacher = await user("rm-teacher@x.test", "instructor");
    await addMemberByEmail(db, links, c.id, { email: learner.email, role: "learner" }, null);
    await addMemberByEmail(db, links, c.id, { email: teacher.email, role: "instructor" }, null);
    expect(await removeMember(db, c.id, learner.id, "admin-rm")).toEqual({ userId: learner.id, role: "learner" });
    expect(await removeMember(db, c.id, teacher.id, "admin-rm")).toEqual({ userId: teacher.id, role: "instructor" });
    expect((await cohortMembers(db, c.id)).members).toEqual([]);
    await expect(removeMember(db, c.id, learner.id, "admin-rm")).rejects.toBeInstanceOf(MemberNotFoundError);
    await expect(removeMember(db, "no-such-cohort", learner.id, null)).rejects.toMatchObject({ code: "noSuchCohort" });
    await expect(removeMember(db, c.id, "bad\u0000id", null)).rejects.toBeInstanceOf(MemberNotFoundError);
    const removes = (await listAudit(db, { targetIds: [c.id] })).filter((a) => a.action === "cohort.member.remove");
    expect(removes.map((a) => [a.actorId, (a.detail as { role: string }).role]).sort()).toEqual([
      ["admin-rm", "instructor"],
      ["admin-rm", "learner"],
    ]);
  });
});
