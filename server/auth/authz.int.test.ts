/**
 * Authorization matrix, table-driven: every API route and the terminal socket × {anonymous,
 * learner-owner, other learner, instructor of the owner's cohort, instructor of another cohort,
 * admin} → the expected status or close code; allowed combinations really work. Real parts:
 * embedded PostgreSQL, better-auth sessions from real sign-ins, the real route handlers (called
 * with Fetch Requests, as Next calls them), sshd hosts and the gateway over a real WebSocket.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseEnv } from "../config";
import { setServices } from "../compose/services";
import { TerminalTestClient } from "../testing/terminal-client";
import { startTestStack, type TestStack } from "../testing/stack";
import { signInCookie } from "../testing/sign-in";
import { signTerminalToken } from "../terminal/token";
import { CloseCode } from "../terminal/protocol";
import { createInvitation, findOpenInvitation } from "./invitations";
import { createUserWithPassword, type UserView } from "./users";
import * as labSessionRoute from "@/app/api/labs/[slug]/session/route";
import * as progressRoute from "@/app/api/sessions/[id]/progress/route";
import * as startRoute from "@/app/api/sessions/[id]/start/route";
import * as poolTargetRoute from "@/app/api/pool-targets/[slug]/route";
import * as eventsRoute from "@/app/api/sessions/[id]/events/route";
import * as checkRoute from "@/app/api/sessions/[id]/check/route";
import * as machineResetRoute from "@/app/api/sessions/[id]/machines/[name]/reset/route";
import * as machineStartRoute from "@/app/api/sessions/[id]/machines/[name]/start/route";
import * as machineRebootRoute from "@/app/api/sessions/[id]/machines/[name]/reboot/route";
import * as hintRoute from "@/app/api/sessions/[id]/hints/[stepId]/route";
import * as tokensRoute from "@/app/api/sessions/[id]/terminal-tokens/route";
import * as invitationsRoute from "@/app/api/invitations/route";
import * as acceptRoute from "@/app/api/invitations/accept/route";
import * as authRoute from "@/app/api/auth/[...all]/route";
import * as cohortsRoute from "@/app/api/cohorts/route";
import * as cohortRoute from "@/app/api/cohorts/[id]/route";
import * as cohortMembersRoute from "@/app/api/cohorts/[id]/members/route";
import * as cohortMemberRoute from "@/app/api/cohorts/[id]/members/[userId]/route";
import * as invitationRoute from "@/app/api/invitations/[id]/route";
import * as joinRoute from "@/app/api/invitations/join/route";
import * as cohortInvitationsRoute from "@/app/api/cohorts/[id]/invitations/route";
import * as cohortImportRoute from "@/app/api/cohorts/[id]/import/route";
import * as cohortEndRoute from "@/app/api/cohorts/[id]/end/route";
import * as cohortProvisionRoute from "@/app/api/cohorts/[id]/provision/route";
import * as cohortDashboardRoute from "@/app/api/cohorts/[id]/dashboard/route";
import * as cohortEventsRoute from "@/app/api/cohorts/[id]/events/route";
import * as timelineRoute from "@/app/api/sessions/[id]/timeline/route";
import * as extendRoute from "@/app/api/sessions/[id]/extend/route";
import * as labVersionRoute from "@/app/api/sessions/[id]/lab-version/route";
import * as capacityRoute from "@/app/api/capacity/route";
import * as sessionPreviewRoute from "@/app/api/sessions/[id]/preview/route";
import * as labPreviewRoute from "@/app/api/labs/[slug]/preview/route";
import * as tabsRoute from "@/app/api/sessions/[id]/tabs/route";
import * as tabRoute from "@/app/api/sessions/[id]/tabs/[machine]/[number]/route";
import { openTab } from "../sessions/tabs";
import { refuseUnbuiltImage } from "@/server/machines/qemu/image-status";

const BASE = "http://127.0.0.1";
const PASSWORD = "correct horse battery";
const LAB = "hello-terminal";

const ACTORS = ["anonymous", "owner", "otherLearner", "cohortInstructor", "otherInstructor", "admin"] as const;
type Actor = (typeof ACTORS)[number];

let stack: TestStack;
const users = {} as Record<Exclude<Actor, "anonymous">, UserView>;
const cookies = {} as Record<Actor, string>;
let sessionId: string;
/** The cohort of the owner and cohortInstructor (otherLearner and otherInstructor are in another). */
let cohortId: string;
/** A cohort that the "end cohort" row ends (its own learner and session, so the rest stays live). */
let endableCohortId: string;
let endableSessionId: string;
/** A cohort for the member rows (add by email, remove, join by link), apart from the others. */
let membersCohortId: string;
/** Learners with accounts: one the admin adds by email, one the admin removes. */
let addable: UserView;
let removable: UserView;
/** An open invitation the revoke row revokes. */
let revocableId: string;

/** The public origin of the env below (http://HOST:PORT): browsers send it on every state-changing request. */
const ORIGIN = "http://127.0.0.1:3000";
/** What request() puts in Origin: the page's own by default; the hardening rows set another or none (null). */
let originOverride: string | null | undefined;

function request(actor: Actor, path: string, init: RequestInit = {}): Request {
  const headers = new Headers(init.headers);
  if (cookies[actor]) headers.set("cookie", cookies[actor]);
  const origin = originOverride === undefined ? ORIGIN : originOverride;
  if (origin !== null && !headers.has("origin")) headers.set("origin", origin);
  if (typeof init.body === "string" && !headers.has("content-type")) headers.set("content-type", "application/json");
  return new Request(`${BASE}${path}`, { ...init, headers });
}

const params = <T extends object>(p: T) => ({ params: Promise.resolve(p) });

const signIn = (email: string) => signInCookie(stack.auth, email, PASSWORD);

beforeAll(async () => {
  stack = await startTestStack({ subnet: 52, terminalAuth: "sign-in" });
  const env = parseEnv({ NODE_ENV: "test", LABDECK_DATA_DIR: "/nonexistent", HOST: "127.0.0.1", PORT: "3000" });
  setServices({ ...stack, env, refuseUnbuiltImage: (lab) => refuseUnbuiltImage({ provider: stack.provider, env }, lab) });
  const make = (key: string, role: "learner" | "instructor" | "admin") =>
    createUserWithPassword(stack.db, stack.auth, { email: `${key.toLowerCase()}@example.test`, name: key, role, password: PASSWORD });
  users.owner = await make("owner", "learner");
  users.otherLearner = await make("otherLearner", "learner");
  users.cohortInstructor = await make("cohortInstructor", "instructor");
  users.otherInstructor = await make("otherInstructor", "instructor");
  users.admin = await make("admin", "admin");
  const cohort = await stack.db.cohort.create({ data: { name: "CKA 1", labs: [LAB] } });
  cohortId = cohort.id;
  const otherCohort = await stack.db.cohort.create({ data: { name: "CKA 2" } });
  await stack.db.cohortMember.createMany({
    data: [
      { cohortId: cohort.id, userId: users.owner.id, role: "learner" },
      { cohortId: cohort.id, userId: users.cohortInstructor.id, role: "instructor" },
      { cohortId: otherCohort.id, userId: users.otherLearner.id, role: "learner" },
      { cohortId: otherCohort.id, userId: users.otherInstructor.id, role: "instructor" },
    ],
  });
  cookies.anonymous = "";
  for (const actor of ACTORS) if (actor !== "anonymous") cookies[actor] = await signIn(users[actor].email);
  sessionId = await stack.startSession(users.owner.id, LAB);
  await stack.db.labSession.update({ where: { id: sessionId }, data: { expiresAt: new Date(Date.now() + 60 * 60_000) } });
  const ender = await make("ender", "learner");
  const endable = await stack.db.cohort.create({ data: { name: "CKA end", labs: [LAB] } });
  endableCohortId = endable.id;
  await stack.db.cohortMember.create({ data: { cohortId: endable.id, userId: ender.id, role: "learner" } });
  endableSessionId = await stack.startSession(ender.id, LAB);
  membersCohortId = (await stack.db.cohort.create({ data: { name: "CKA members", labs: [LAB] } })).id;
  addable = await make("addable", "learner");
  removable = await make("removable", "learner");
  await stack.db.cohortMember.create({ data: { cohortId: membersCohortId, userId: removable.id, role: "learner" } });
  revocableId = (
    await createInvitation(stack.db, { email: "revocable@example.test", role: "learner", cohortId: membersCohortId }, users.admin.id, {
      secret: stack.secret,
    })
  ).invitation.id;
}, 180_000);

afterAll(async () => {
  await stack?.stop();
});

type Expect = Record<Actor, number>;
/** Allowed for the session's owner and its watchers (admin, instructor of the owner's cohort). */
const WATCHABLE: Expect = { anonymous: 401, owner: 200, otherLearner: 404, cohortInstructor: 200, otherInstructor: 404, admin: 200 };
/** The owner's actions: watchers see the session but may not act (403); strangers do not see it (404). */
const OWNER_ONLY: Expect = { anonymous: 401, owner: 200, otherLearner: 404, cohortInstructor: 403, otherInstructor: 404, admin: 403 };
const ADMIN_ONLY: Expect = { anonymous: 401, owner: 403, otherLearner: 403, cohortInstructor: 403, otherInstructor: 403, admin: 200 };
/** Admins, and instructors of the cohort; other instructors do not see it (404), learners are refused (403). */
const COHORT_VIEW: Expect = { anonymous: 401, owner: 403, otherLearner: 403, cohortInstructor: 200, otherInstructor: 404, admin: 200 };
const SIGNED_IN: Expect = { anonymous: 401, owner: 200, otherLearner: 200, cohortInstructor: 200, otherInstructor: 200, admin: 200 };
/** The owner's extra tab that the DELETE row closes (opened when first needed, so refused calls leave none behind). */
let deletableTab: { machine: string; number: number } | null = null;

const ROUTES: {
  name: string;
  expect: Expect;
  call: (actor: Actor) => Promise<Response>;
  works?: (actor: Actor, res: Response) => Promise<void>;
}[] = [
  {
    name: "POST /api/labs/:slug/session (start or resume one's own)",
    expect: SIGNED_IN,
    call: (a) => labSessionRoute.POST(request(a, `/api/labs/${LAB}/session`, { method: "POST" }), params({ slug: LAB })),
    works: async (actor, res) => {
      const body = (await res.json()) as { sessionId: string; mode: string; machines: { name: string }[] };
      expect(body.mode).toBe("write");
      expect(body.machines.map((m) => m.name)).toEqual(["controlplane", "node01", "node02"]);
      const row = await stack.db.labSession.findUniqueOrThrow({ where: { id: body.sessionId } });
      expect(row.learnerId).toBe(users[actor as Exclude<Actor, "anonymous">].id);
      if (actor === "owner") expect(body.sessionId).toBe(sessionId);
    },
  },
  {
    name: "GET /api/sessions/:id/progress",
    expect: WATCHABLE,
    call: (a) => progressRoute.GET(request(a, `/api/sessions/${sessionId}/progress`), params({ id: sessionId })),
    works: async (_a, res) => expect(((await res.json()) as { sessionId: string }).sessionId).toBe(sessionId),
  },
  {
    name: "GET /api/sessions/:id/start",
    expect: WATCHABLE,
    call: (a) => startRoute.GET(request(a, `/api/sessions/${sessionId}/start`), params({ id: sessionId })),
    works: async (_a, res) => expect(await res.json()).toMatchObject({ sessionId, state: "ready", stage: null, error: null }),
  },
  {
    name: "GET /api/sessions/:id/events (SSE)",
    expect: WATCHABLE,
    call: async (a) => {
      const controller = new AbortController();
      const res = await eventsRoute.GET(
        request(a, `/api/sessions/${sessionId}/events`, { signal: controller.signal }),
        params({ id: sessionId }),
      );
      if (res.status !== 200) return res;
      const reader = res.body!.getReader();
      const first = new TextDecoder().decode((await reader.read()).value);
      controller.abort();
      await reader.cancel();
      return new Response(first, { status: 200 });
    },
    works: async (_a, res) => expect(await res.text()).toMatch(/^event: progress\ndata: \{/),
  },
  {
    name: "POST /api/sessions/:id/check",
    expect: OWNER_ONLY,
    call: (a) => checkRoute.POST(request(a, `/api/sessions/${sessionId}/check`, { method: "POST" }), params({ id: sessionId })),
    works: async (_a, res) => expect(((await res.json()) as { progress: { sessionId: string } }).progress.sessionId).toBe(sessionId),
  },
  {
    name: "POST /api/sessions/:id/hints/:stepId",
    expect: OWNER_ONLY,
    call: (a) =>
      hintRoute.POST(
        request(a, `/api/sessions/${sessionId}/hints/hello-file`, { method: "POST" }),
        params({ id: sessionId, stepId: "hello-file" }),
      ),
    works: async (_a, res) => expect(((await res.json()) as { hint: string }).hint.length).toBeGreaterThan(0),
  },
  {
    // The static hosts under this test cannot power machines on or reset them: the owner passes
    // authorization and gets 501 from the route itself (QEMU: warm-pool.vm.test.ts, qemu.vm.test.ts).
    name: "POST /api/sessions/:id/machines/:name/start",
    expect: { ...OWNER_ONLY, owner: 501 },
    call: (a) =>
      machineStartRoute.POST(
        request(a, `/api/sessions/${sessionId}/machines/node01/start`, { method: "POST" }),
        params({ id: sessionId, name: "node01" }),
      ),
  },
  {
    name: "POST /api/sessions/:id/machines/:name/reboot",
    expect: { ...OWNER_ONLY, owner: 501 },
    call: (a) =>
      machineRebootRoute.POST(
        request(a, `/api/sessions/${sessionId}/machines/node01/reboot`, { method: "POST" }),
        params({ id: sessionId, name: "node01" }),
      ),
  },
  {
    name: "POST /api/sessions/:id/machines/:name/reset",
    expect: { ...OWNER_ONLY, owner: 501 },
    call: (a) =>
      machineResetRoute.POST(
        request(a, `/api/sessions/${sessionId}/machines/node01/reset`, { method: "POST" }),
        params({ id: sessionId, name: "node01" }),
      ),
  },
  {
    name: "GET /api/sessions/:id/terminal-tokens",
    expect: WATCHABLE,
    call: (a) => tokensRoute.GET(request(a, `/api/sessions/${sessionId}/terminal-tokens`), params({ id: sessionId })),
    works: async (actor, res) => {
      const body = (await res.json()) as { mode: string; machines: unknown[] };
      expect(body.mode).toBe(actor === "owner" ? "write" : "read");
      expect(body.machines).toHaveLength(3);
    },
  },
  {
    name: "GET /api/invitations",
    expect: ADMIN_ONLY,
    call: (a) => invitationsRoute.GET(request(a, "/api/invitations"), {}),
    works: async (_a, res) => expect(Array.isArray(((await res.json()) as { invitations: unknown[] }).invitations)).toBe(true),
  },
  {
    name: "POST /api/invitations",
    expect: { ...ADMIN_ONLY, admin: 201 },
    call: (a) =>
      invitationsRoute.POST(
        request(a, "/api/invitations", { method: "POST", body: JSON.stringify({ email: `new-${a}@example.test`, role: "learner" }) }),
        {},
      ),
    works: async (_a, res) => expect(((await res.json()) as { url: string }).url).toMatch(/\/invite\/[A-Za-z0-9_-]{43}$/),
  },
  {
    name: "GET /api/cohorts",
    expect: { ...COHORT_VIEW, otherInstructor: 200 },
    call: (a) => cohortsRoute.GET(request(a, "/api/cohorts"), {}),
    works: async (actor, res) => {
      const ids = ((await res.json()) as { cohorts: { id: string }[] }).cohorts.map((c) => c.id);
      expect(ids.includes(cohortId)).toBe(actor !== "otherInstructor");
    },
  },
  {
    name: "POST /api/cohorts",
    expect: { ...ADMIN_ONLY, admin: 201 },
    call: (a) =>
      cohortsRoute.POST(
        request(a, "/api/cohorts", { method: "POST", body: JSON.stringify({ name: `New ${a}`, labs: [LAB], sessionMinutes: 90 }) }),
        {},
      ),
    works: async (_a, res) => expect(((await res.json()) as { cohort: { sessionMinutes: number } }).cohort.sessionMinutes).toBe(90),
  },
  {
    name: "GET /api/cohorts/:id",
    expect: COHORT_VIEW,
    call: (a) => cohortRoute.GET(request(a, `/api/cohorts/${cohortId}`), params({ id: cohortId })),
    works: async (_a, res) => {
      const body = (await res.json()) as { members: { email: string }[] };
      expect(body.members.map((m) => m.email)).toContain(users.owner.email);
    },
  },
  {
    name: "PUT /api/pool-targets/:slug (a lab's prepared sets and cap)",
    expect: ADMIN_ONLY,
    call: (a) =>
      poolTargetRoute.PUT(
        request(a, `/api/pool-targets/${LAB}`, { method: "PUT", body: JSON.stringify({ reserve: 0, initial: 0, cap: null }) }),
        params({ slug: LAB }),
      ),
    works: async (_a, res) => {
      expect(await res.json()).toEqual({ target: { labSlug: LAB, reserve: 0, initial: 0, cap: null } });
      expect(await stack.db.auditLog.count({ where: { action: "pool.target", targetId: LAB } })).toBeGreaterThan(0);
    },
  },
  {
    name: "DELETE /api/pool-targets/:slug",
    expect: ADMIN_ONLY,
    call: (a) => poolTargetRoute.DELETE(request(a, `/api/pool-targets/${LAB}`, { method: "DELETE" }), params({ slug: LAB })),
    works: async () => expect(await stack.db.poolTarget.count({ where: { labSlug: LAB } })).toBe(0),
  },
  {
    name: "PUT /api/cohorts/:id",
    expect: ADMIN_ONLY,
    call: (a) =>
      cohortRoute.PUT(
        request(a, `/api/cohorts/${cohortId}`, { method: "PUT", body: JSON.stringify({ name: "CKA 1", labs: [LAB], idleMinutes: 20 }) }),
        params({ id: cohortId }),
      ),
    works: async (_a, res) => expect(((await res.json()) as { cohort: { idleMinutes: number } }).cohort.idleMinutes).toBe(20),
  },
  {
    name: "POST /api/cohorts/:id/members (assign an instructor who already is one: 200 alreadyMember)",
    expect: ADMIN_ONLY,
    call: (a) =>
      cohortMembersRoute.POST(
        request(a, `/api/cohorts/${cohortId}/members`, {
          method: "POST",
          body: JSON.stringify({ email: users.cohortInstructor.email, role: "instructor" }),
        }),
        params({ id: cohortId }),
      ),
    works: async (_a, res) => expect(await res.json()).toMatchObject({ outcome: "alreadyMember", member: { role: "instructor" } }),
  },
  {
    name: "POST /api/cohorts/:id/members (an existing learner by email: member at once)",
    expect: { ...ADMIN_ONLY, admin: 201 },
    call: (a) =>
      cohortMembersRoute.POST(
        request(a, `/api/cohorts/${membersCohortId}/members`, {
          method: "POST",
          body: JSON.stringify({ email: addable.email, role: "learner" }),
        }),
        params({ id: membersCohortId }),
      ),
    works: async (_a, res) => {
      expect(await res.json()).toMatchObject({ outcome: "added", member: { userId: addable.id, role: "learner" } });
      expect(await stack.db.cohortMember.count({ where: { cohortId: membersCohortId, userId: addable.id } })).toBe(1);
    },
  },
  {
    name: "POST /api/cohorts/:id/members (an unknown email: an invitation with its link)",
    expect: { ...ADMIN_ONLY, admin: 201 },
    call: (a) =>
      cohortMembersRoute.POST(
        request(a, `/api/cohorts/${membersCohortId}/members`, {
          method: "POST",
          body: JSON.stringify({ email: `m-${a}@example.test`, role: "learner" }),
        }),
        params({ id: membersCohortId }),
      ),
    works: async (_a, res) => {
      const body = (await res.json()) as { outcome: string; invitation: { cohortId: string; url: string } };
      expect(body.outcome).toBe("invited");
      expect(body.invitation.cohortId).toBe(membersCohortId);
      expect(body.invitation.url).toMatch(/\/invite\/[A-Za-z0-9_-]{43}$/);
    },
  },
  {
    name: "DELETE /api/cohorts/:id/members/:userId (remove a member, audited)",
    expect: ADMIN_ONLY,
    call: (a) =>
      cohortMemberRoute.DELETE(
        request(a, `/api/cohorts/${membersCohortId}/members/${removable.id}`, { method: "DELETE" }),
        params({ id: membersCohortId, userId: removable.id }),
      ),
    works: async (_a, res) => {
      expect(await res.json()).toEqual({ removed: { userId: removable.id, role: "learner" } });
      expect(await stack.db.cohortMember.count({ where: { cohortId: membersCohortId, userId: removable.id } })).toBe(0);
      expect(
        await stack.db.auditLog.count({ where: { action: "cohort.member.remove", targetId: membersCohortId, actorId: users.admin.id } }),
      ).toBe(1);
      const again = await cohortMemberRoute.DELETE(
        request("admin", `/api/cohorts/${membersCohortId}/members/${removable.id}`, { method: "DELETE" }),
        params({ id: membersCohortId, userId: removable.id }),
      );
      expect(again.status).toBe(404);
    },
  },
  {
    name: "DELETE /api/invitations/:id (revoke)",
    expect: ADMIN_ONLY,
    call: (a) => invitationRoute.DELETE(request(a, `/api/invitations/${revocableId}`, { method: "DELETE" }), params({ id: revocableId })),
    works: async (_a, res) => {
      expect(await res.json()).toEqual({ revoked: revocableId });
      expect((await stack.db.invitation.findUniqueOrThrow({ where: { id: revocableId } })).revokedAt).not.toBeNull();
      const again = await invitationRoute.DELETE(
        request("admin", `/api/invitations/${revocableId}`, { method: "DELETE" }),
        params({ id: revocableId }),
      );
      expect(again.status).toBe(404);
    },
  },
  {
    // A fresh invitation for otherLearner's email per actor: only that account may use it; any
    // other signed-in account is refused and the invitation stays open.
    name: "POST /api/invitations/join (an existing account joins by its own cohort invitation)",
    expect: { anonymous: 401, owner: 403, otherLearner: 201, cohortInstructor: 403, otherInstructor: 403, admin: 403 },
    call: async (a) => {
      const { token } = await createInvitation(
        stack.db,
        { email: users.otherLearner.email, role: "learner", cohortId: membersCohortId },
        users.admin.id,
        { secret: stack.secret },
      );
      const res = await joinRoute.POST(request(a, "/api/invitations/join", { method: "POST", body: JSON.stringify({ token }) }), {});
      if (res.status === 403) expect(await findOpenInvitation(stack.db, token)).not.toBeNull();
      return res;
    },
    works: async (_a, res) => {
      expect(await res.json()).toMatchObject({ cohortId: membersCohortId, role: "learner" });
      expect(await stack.db.cohortMember.count({ where: { cohortId: membersCohortId, userId: users.otherLearner.id } })).toBe(1);
      expect(await stack.db.user.count({ where: { email: users.otherLearner.email } })).toBe(1);
    },
  },
  {
    name: "POST /api/cohorts/:id/invitations",
    expect: { ...ADMIN_ONLY, admin: 201 },
    call: (a) =>
      cohortInvitationsRoute.POST(
        request(a, `/api/cohorts/${cohortId}/invitations`, { method: "POST", body: JSON.stringify({ email: `c-${a}@example.test` }) }),
        params({ id: cohortId }),
      ),
    works: async (_a, res) => {
      const body = (await res.json()) as { invitation: { cohortId: string; role: string }; url: string };
      expect(body.invitation).toMatchObject({ cohortId, role: "learner" });
      expect(body.url).toMatch(/\/invite\/[A-Za-z0-9_-]{43}$/);
    },
  },
  {
    name: "POST /api/cohorts/:id/import (CSV)",
    expect: { ...ADMIN_ONLY, admin: 201 },
    call: (a) =>
      cohortImportRoute.POST(
        request(a, `/api/cohorts/${cohortId}/import`, {
          method: "POST",
          headers: { "content-type": "text/csv" },
          body: `email,name\ncsv-${a}@example.test,CSV ${a}\nbad,row\n`,
        }),
        params({ id: cohortId }),
      ),
    works: async (_a, res) => {
      const body = (await res.json()) as { invited: { email: string }[]; problems: { line: number; code: string }[] };
      expect(body.invited.map((r) => r.email)).toEqual(["csv-admin@example.test"]);
      expect(body.problems).toEqual([expect.objectContaining({ line: 3, code: "email" })]);
    },
  },
  {
    name: "GET /api/cohorts/:id/provision",
    expect: ADMIN_ONLY,
    call: (a) => cohortProvisionRoute.GET(request(a, `/api/cohorts/${cohortId}/provision`), params({ id: cohortId })),
  },
  {
    name: "POST /api/cohorts/:id/provision (pre-provision every learner × lab)",
    expect: { ...ADMIN_ONLY, admin: 202 },
    call: (a) => cohortProvisionRoute.POST(request(a, `/api/cohorts/${cohortId}/provision`, { method: "POST" }), params({ id: cohortId })),
    works: async (_a, res) => {
      const { job } = (await res.json()) as { job: { id: string; total: number } };
      expect(job.total).toBe(1); // the owner × hello-terminal
      await expect
        .poll(async () => (await stack.db.provisionJob.findUniqueOrThrow({ where: { id: job.id } })).state, { timeout: 60_000 })
        .toBe("done");
      const row = await stack.db.provisionJob.findUniqueOrThrow({ where: { id: job.id } });
      expect([row.succeeded, row.failed]).toEqual([1, 0]);
    },
  },
  {
    name: "GET /api/cohorts/:id/dashboard",
    expect: COHORT_VIEW,
    call: (a) => cohortDashboardRoute.GET(request(a, `/api/cohorts/${cohortId}/dashboard`), params({ id: cohortId })),
    works: async (_a, res) => {
      const body = (await res.json()) as { learners: { userId: string; sessionId: string }[]; steps: unknown[] };
      expect(body.learners.map((l) => [l.userId, l.sessionId])).toEqual([[users.owner.id, sessionId]]);
      expect(body.steps.length).toBeGreaterThan(0);
    },
  },
  {
    name: "GET /api/cohorts/:id/events (SSE)",
    expect: COHORT_VIEW,
    call: async (a) => {
      const controller = new AbortController();
      const res = await cohortEventsRoute.GET(
        request(a, `/api/cohorts/${cohortId}/events`, { signal: controller.signal }),
        params({ id: cohortId }),
      );
      if (res.status !== 200) return res;
      const reader = res.body!.getReader();
      const first = new TextDecoder().decode((await reader.read()).value);
      controller.abort();
      await reader.cancel();
      return new Response(first, { status: 200 });
    },
    works: async (_a, res) => expect(await res.text()).toMatch(/^event: hello\n/),
  },
  {
    name: "GET /api/sessions/:id/timeline",
    expect: WATCHABLE,
    call: (a) => timelineRoute.GET(request(a, `/api/sessions/${sessionId}/timeline`), params({ id: sessionId })),
    works: async (_a, res) => expect(Array.isArray(((await res.json()) as { runs: unknown[] }).runs)).toBe(true),
  },
  {
    name: "POST /api/sessions/:id/extend",
    expect: ADMIN_ONLY,
    call: (a) =>
      extendRoute.POST(
        request(a, `/api/sessions/${sessionId}/extend`, { method: "POST", body: JSON.stringify({ minutes: 10 }) }),
        params({ id: sessionId }),
      ),
    works: async (_a, res) =>
      expect(Date.parse(((await res.json()) as { expiresAt: string }).expiresAt)).toBeGreaterThan(Date.now() + 65 * 60_000),
  },
  {
    name: "POST /api/sessions/:id/lab-version (move to the lab's current version)",
    expect: ADMIN_ONLY,
    call: (a) => labVersionRoute.POST(request(a, `/api/sessions/${sessionId}/lab-version`, { method: "POST" }), params({ id: sessionId })),
    works: async (_a, res) => {
      // The lab on disk is unchanged: the session already runs its current version.
      const row = await stack.db.labSession.findUniqueOrThrow({ where: { id: sessionId } });
      expect(await res.json()).toMatchObject({ sessionId, moved: false, from: row.labVersion, to: row.labVersion });
      const missing = await labVersionRoute.POST(
        request("admin", "/api/sessions/nope/lab-version", { method: "POST" }),
        params({ id: "nope" }),
      );
      expect([missing.status, ((await missing.json()) as { code: string }).code]).toEqual([404, "noSuchSession"]);
    },
  },
  {
    name: "GET /api/capacity",
    expect: ADMIN_ONLY,
    call: (a) => capacityRoute.GET(request(a, "/api/capacity"), {}),
    works: async (_a, res) => {
      const body = (await res.json()) as {
        provider: string;
        sessions: { ready: number };
        machines: number;
        memory: { totalBytes: number };
      };
      expect(body.provider).toBe("static");
      expect(body.sessions.ready).toBeGreaterThanOrEqual(2);
      expect(body.machines).toBeGreaterThanOrEqual(6);
      expect(body.memory.totalBytes).toBeGreaterThan(0);
    },
  },
  {
    // The web preview's way in (server/preview/): a redirect to the preview origin with an entry code.
    name: "GET /api/sessions/:id/preview (web preview entry)",
    expect: { ...WATCHABLE, owner: 303, cohortInstructor: 303, admin: 303 },
    call: (a) =>
      sessionPreviewRoute.GET(request(a, `/api/sessions/${sessionId}/preview?machine=node01&port=8080&path=/`), params({ id: sessionId })),
    works: async (_a, res) => expect(new URL(res.headers.get("location")!).hostname).toBe(`8080-node01-${sessionId}.preview.localhost`),
  },
  {
    // Every actor has a session of the lab by now (the first row started one each).
    name: "GET /api/labs/:slug/preview (one's own session)",
    expect: { anonymous: 401, owner: 303, otherLearner: 303, cohortInstructor: 303, otherInstructor: 303, admin: 303 },
    call: (a) => labPreviewRoute.GET(request(a, `/api/labs/${LAB}/preview?machine=node02&port=80`), params({ slug: LAB })),
    works: async (actor, res) => {
      const host = new URL(res.headers.get("location")!).hostname;
      const own = await stack.db.labSession.findFirstOrThrow({
        where: { learnerId: users[actor as Exclude<Actor, "anonymous">].id, labSlug: LAB, state: "ready" },
      });
      expect(host).toBe(`80-node02-${own.id}.preview.localhost`);
    },
  },
  {
    name: "POST /api/sessions/:id/tabs (another shell)",
    expect: { ...OWNER_ONLY, owner: 201 },
    call: (a) =>
      tabsRoute.POST(
        request(a, `/api/sessions/${sessionId}/tabs`, { method: "POST", body: JSON.stringify({ machine: "node01" }) }),
        params({ id: sessionId }),
      ),
    works: async (_a, res) => {
      const body = (await res.json()) as { machine: string; number: number; token: string };
      expect(body).toMatchObject({ machine: "node01", number: 2 });
      expect(body.token.length).toBeGreaterThan(20);
    },
  },
  {
    name: "DELETE /api/sessions/:id/tabs/:machine/:number (close a shell)",
    expect: OWNER_ONLY,
    call: async (a) => {
      if (a === "owner" && !deletableTab) deletableTab = await openTab(stack.db, sessionId, "node02");
      const tab = deletableTab ?? { machine: "node02", number: 2 };
      return tabRoute.DELETE(
        request(a, `/api/sessions/${sessionId}/tabs/${tab.machine}/${tab.number}`, { method: "DELETE" }),
        params({ id: sessionId, machine: tab.machine, number: String(tab.number) }),
      );
    },
    works: async () => {
      const row = await stack.db.terminalTab.findFirstOrThrow({
        where: { sessionId, machine: deletableTab!.machine, number: deletableTab!.number },
      });
      expect(row.closedAt).not.toBeNull();
      deletableTab = null;
    },
  },
  {
    name: "POST /api/cohorts/:id/end (sessions ended, machines released)",
    expect: ADMIN_ONLY,
    call: (a) =>
      cohortEndRoute.POST(request(a, `/api/cohorts/${endableCohortId}/end`, { method: "POST" }), params({ id: endableCohortId })),
    works: async (_a, res) => {
      expect(((await res.json()) as { ended: string[] }).ended).toEqual([endableSessionId]);
      const s = await stack.db.labSession.findUniqueOrThrow({ where: { id: endableSessionId } });
      expect([s.state, s.endReason]).toEqual(["ended", "admin"]);
      expect((await stack.db.cohort.findUniqueOrThrow({ where: { id: endableCohortId } })).endedAt).not.toBeNull();
      expect(await stack.db.auditLog.count({ where: { action: "cohort.end", targetId: endableCohortId } })).toBe(1);
    },
  },
];

describe("API routes × actors", () => {
  for (const route of ROUTES) {
    for (const actor of ACTORS) {
      const status = route.expect[actor];
      it(`${route.name} as ${actor} → ${status}`, async () => {
        const res = await route.call(actor);
        expect(res.status).toBe(status);
        if (status < 400) await route.works?.(actor, res);
        else {
          const body = (await res.json()) as { code: string; error: string };
          expect(body.code).toMatch(/^[a-zA-Z]+$/);
          expect(body.error.length).toBeGreaterThan(0);
        }
      });
    }
  }

  it("a session that does not exist is 404 for every signed-in actor (indistinguishable from someone else's)", async () => {
    for (const actor of ACTORS.filter((a) => a !== "anonymous")) {
      const res = await progressRoute.GET(request(actor, "/api/sessions/nope/progress"), params({ id: "nope" }));
      expect(res.status).toBe(404);
    }
  });

  it("error messages follow the language cookie (Japanese by default)", async () => {
    const ja = (await (await progressRoute.GET(request("anonymous", "/api/sessions/x/progress"), params({ id: "x" }))).json()) as {
      error: string;
    };
    const en = (await (
      await progressRoute.GET(
        request("anonymous", "/api/sessions/x/progress", { headers: { cookie: "labdeck_locale=en" } }),
        params({ id: "x" }),
      )
    ).json()) as { error: string };
    expect(ja.error).toBe("ログインしていません。ログインしてください。");
    expect(en.error).toBe("You are not signed in. Please sign in.");
  });
});

const STATE_CHANGING = ROUTES.filter((r) => /^(POST|PUT|PATCH|DELETE) /.test(r.name));

describe("web-tier hardening: origin, body size, media type, NUL bytes, unknown references", () => {
  it("covers every state-changing route of the matrix", () => expect(STATE_CHANGING.length).toBeGreaterThanOrEqual(14));

  for (const route of STATE_CHANGING) {
    for (const [label, origin, code] of [
      ["from another origin", "http://evil.example", "badOrigin"],
      ["from another port of the same host", "http://127.0.0.1:3001", "badOrigin"],
      ["without Origin", null, "missingOrigin"],
    ] as const) {
      it(`${route.name} ${label} → 403 ${code}, before anything happens (as admin and as the owner)`, async () => {
        const audits = await stack.db.auditLog.count();
        originOverride = origin;
        try {
          for (const actor of ["admin", "owner"] as const) {
            const res = await route.call(actor);
            expect(res.status).toBe(403);
            expect(((await res.json()) as { code: string }).code).toBe(code);
          }
        } finally {
          originOverride = undefined;
        }
        expect(await stack.db.auditLog.count()).toBe(audits);
      });
    }
  }

  it("the invitation accept route (no sign-in) refuses another origin and a missing one", async () => {
    for (const origin of ["http://evil.example", null]) {
      const headers: Record<string, string> = { "content-type": "application/json" };
      if (origin) headers.origin = origin;
      const res = await acceptRoute.POST(
        new Request(`${BASE}/api/invitations/accept`, {
          method: "POST",
          headers,
          body: JSON.stringify({ token: "x".repeat(43), name: "N", password: PASSWORD }),
        }),
        {},
      );
      expect(res.status).toBe(403);
    }
  });

  it("GET requests need no Origin (links, reloads)", async () => {
    originOverride = null;
    try {
      expect((await progressRoute.GET(request("owner", `/api/sessions/${sessionId}/progress`), params({ id: sessionId }))).status).toBe(
        200,
      );
    } finally {
      originOverride = undefined;
    }
  });

  const big = JSON.stringify({ email: "big@example.test", role: "learner", pad: "x".repeat(100 * 1024) });
  it("a JSON body over 64 KiB is 413 (counted as it arrives, no Content-Length needed)", async () => {
    for (const res of [
      await invitationsRoute.POST(request("admin", "/api/invitations", { method: "POST", body: big }), {}),
      await cohortsRoute.POST(request("admin", "/api/cohorts", { method: "POST", body: big }), {}),
      await acceptRoute.POST(request("anonymous", "/api/invitations/accept", { method: "POST", body: big }), {}),
    ]) {
      expect(res.status).toBe(413);
      expect(((await res.json()) as { code: string }).code).toBe("bodyTooLarge");
    }
    expect(await stack.db.invitation.count({ where: { email: "big@example.test" } })).toBe(0);
  });

  it("a declared Content-Length over the limit is 413 even on routes that read no body", async () => {
    const res = await checkRoute.POST(
      request("owner", `/api/sessions/${sessionId}/check`, { method: "POST", headers: { "content-length": String(10 * 1024 * 1024) } }),
      params({ id: sessionId }),
    );
    expect(res.status).toBe(413);
  });

  it("a CSV import may be larger than 64 KiB (its limit is 2 MiB)", async () => {
    const csv = "email,name\n" + Array.from({ length: 3000 }, (_, i) => `bulk-${i}@example.invalid,Bulk ${i} ${"y".repeat(10)}`).join("\n");
    expect(csv.length).toBeGreaterThan(64 * 1024);
    const res = await cohortImportRoute.POST(
      request("admin", `/api/cohorts/${cohortId}/import`, { method: "POST", headers: { "content-type": "text/csv" }, body: csv }),
      params({ id: cohortId }),
    );
    expect(res.status).not.toBe(413);
    expect(res.status).toBeLessThan(500);
  });

  it("a JSON route given another media type is 415", async () => {
    const res = await cohortsRoute.POST(
      request("admin", "/api/cohorts", {
        method: "POST",
        headers: { "content-type": "text/plain" },
        body: JSON.stringify({ name: "Plain", labs: [LAB] }),
      }),
      {},
    );
    expect(res.status).toBe(415);
    expect(((await res.json()) as { code: string }).code).toBe("unsupportedMediaType");
    const form = await invitationsRoute.POST(
      request("admin", "/api/invitations", {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: "email=a@b.c&role=admin",
      }),
      {},
    );
    expect(form.status).toBe(415);
  });

  it("NUL bytes in ids, names and emails are 400, never 500", async () => {
    const nul = "a\u0000b";
    const cases = [
      await progressRoute.GET(request("owner", `/api/sessions/${encodeURIComponent(nul)}/progress`), params({ id: nul })),
      await checkRoute.POST(request("owner", `/api/sessions/${encodeURIComponent(nul)}/check`, { method: "POST" }), params({ id: nul })),
      await labSessionRoute.POST(
        request("owner", `/api/labs/${encodeURIComponent(nul)}/session`, { method: "POST" }),
        params({ slug: nul }),
      ),
      await cohortRoute.GET(request("admin", `/api/cohorts/${encodeURIComponent(nul)}`), params({ id: nul })),
      await cohortsRoute.POST(request("admin", "/api/cohorts", { method: "POST", body: JSON.stringify({ name: nul, labs: [LAB] }) }), {}),
      await invitationsRoute.POST(
        request("admin", "/api/invitations", { method: "POST", body: JSON.stringify({ email: `x${nul}@example.test`, role: "learner" }) }),
        {},
      ),
      await acceptRoute.POST(
        request("anonymous", "/api/invitations/accept", {
          method: "POST",
          body: JSON.stringify({ token: "x".repeat(43), name: nul, password: PASSWORD }),
        }),
        {},
      ),
    ];
    for (const res of cases) {
      expect(res.status).toBe(400);
      expect(((await res.json()) as { code: string }).code).toBe("badRequest");
    }
  });

  it("an invitation to a cohort that does not exist is 400 or 404, not 500 (foreign key)", async () => {
    const res = await invitationsRoute.POST(
      request("admin", "/api/invitations", {
        method: "POST",
        body: JSON.stringify({ email: "ghost@example.test", role: "learner", cohortId: "no-such-cohort" }),
      }),
      {},
    );
    expect([400, 404]).toContain(res.status);
    expect(((await res.json()) as { error: string }).error.length).toBeGreaterThan(0);
  });
});

describe("throttling (rate-limiter-flexible, counters in PostgreSQL)", () => {
  const signInVia = (email: string, password: string, address: string) =>
    authRoute.POST(
      new Request(`${BASE}/api/auth/sign-in/email`, {
        method: "POST",
        // As server.ts sets it: the address it believes, never the client's X-Forwarded-For.
        headers: { "content-type": "application/json", origin: BASE, "x-labdeck-client-address": address },
        body: JSON.stringify({ email, password }),
      }),
    );

  // Sign-in's own limits (per account + address, account, address; known pairs): sign-in-limits.db.test.ts.
  it("one address trying many accounts is throttled by address", async () => {
    let last = 0;
    for (let i = 0; i < 101; i++) last = (await signInVia(`nobody-${i}@example.test`, "wrong password!", "203.0.113.50")).status;
    expect(last).toBe(429);
  }, 300_000); // 101 sign-ins, each a password hash: 120 s was too little beside another test file and TCG guests

  it("manual checks are rate-limited per user (429 after 30 a minute)", async () => {
    let last = 0;
    for (let i = 0; i < 31 && last !== 429; i++) {
      last = (await checkRoute.POST(request("owner", `/api/sessions/${sessionId}/check`, { method: "POST" }), params({ id: sessionId })))
        .status;
    }
    expect(last).toBe(429);
  }, 120_000);
});

describe("a lab's prepared sets and cap (pool targets)", () => {
  it("bad input is 400 and changes nothing; a lab that does not exist is 404", async () => {
    const put = (slug: string, body: unknown) =>
      poolTargetRoute.PUT(request("admin", `/api/pool-targets/${slug}`, { method: "PUT", body: JSON.stringify(body) }), params({ slug }));
    for (const body of [
      { reserve: -1, initial: 0, cap: null },
      { reserve: 1, initial: 0 },
      { reserve: 1, initial: 0, cap: 0 },
      { reserve: 1, initial: 0, cap: null, extra: 1 },
      "x",
    ]) {
      expect((await put(LAB, body)).status).toBe(400);
    }
    expect(await stack.db.poolTarget.count({ where: { labSlug: LAB } })).toBe(0);
    expect((await put("no-such-lab", { reserve: 1, initial: 1, cap: null })).status).toBe(404);
    expect(await stack.db.poolTarget.count()).toBe(0);
  });
});

describe("which labs a learner may start", () => {
  it("a learner starting a lab outside their cohorts (not open to all) is 403, before any machine is taken; staff may", async () => {
    const closed = "multi-node";
    const lab = await stack.labs.get(closed);
    expect(lab.manifest.openToAll).toBe(false);
    const before = await stack.db.labSession.count();
    const res = await labSessionRoute.POST(
      request("otherLearner", `/api/labs/${closed}/session`, { method: "POST" }),
      params({ slug: closed }),
    );
    expect(res.status).toBe(403);
    expect(((await res.json()) as { code: string }).code).toBe("labNotAllowed");
    expect(await stack.db.labSession.count()).toBe(before);
    expect((await stack.labs.get(LAB)).manifest.openToAll).toBe(true);
  });
});

describe("the no-VM demo mode (LABDECK_MACHINES=netns-demo)", () => {
  it("refuses a lab that changes the machine (409 labNeedsRealMachines, no session); a lab that does not still starts", async () => {
    const env = parseEnv({
      NODE_ENV: "test",
      LABDECK_DATA_DIR: "/nonexistent",
      HOST: "127.0.0.1",
      PORT: "3000",
      LABDECK_MACHINES: "netns-demo",
    });
    const normal = parseEnv({ NODE_ENV: "test", LABDECK_DATA_DIR: "/nonexistent", HOST: "127.0.0.1", PORT: "3000" });
    const services = (e: typeof env) =>
      setServices({ ...stack, env: e, refuseUnbuiltImage: (lab) => refuseUnbuiltImage({ provider: stack.provider, env: e }, lab) });
    services(env);
    try {
      expect((await stack.labs.get("preinstall-checks")).manifest.changesMachine).toBe(true);
      const before = await stack.db.labSession.count();
      const res = await labSessionRoute.POST(
        request("admin", "/api/labs/preinstall-checks/session", { method: "POST" }),
        params({ slug: "preinstall-checks" }),
      );
      expect(res.status).toBe(409);
      expect(((await res.json()) as { code: string }).code).toBe("labNeedsRealMachines");
      expect(await stack.db.labSession.count()).toBe(before);
      const ok = await labSessionRoute.POST(request("owner", `/api/labs/${LAB}/session`, { method: "POST" }), params({ slug: LAB }));
      expect(ok.status).toBe(200);
    } finally {
      services(normal);
    }
  });
});

describe("per-user caps on live streams and sockets", () => {
  it("a 9th event stream of one user is refused (429 tooManyStreams); closing one frees a slot", async () => {
    const controllers: AbortController[] = [];
    const open = async () => {
      const controller = new AbortController();
      const res = await eventsRoute.GET(
        request("owner", `/api/sessions/${sessionId}/events`, { signal: controller.signal }),
        params({ id: sessionId }),
      );
      if (res.status === 200) {
        controllers.push(controller);
        await res.body!.getReader().read();
      }
      return res;
    };
    for (let i = 0; i < 8; i++) expect((await open()).status).toBe(200);
    const ninth = await open();
    expect(ninth.status).toBe(429);
    expect(((await ninth.json()) as { code: string }).code).toBe("tooManyStreams");
    // Another user is not affected.
    const other = await cohortEventsRoute.GET(request("cohortInstructor", `/api/cohorts/${cohortId}/events`), params({ id: cohortId }));
    expect(other.status).toBe(200);
    await other.body!.cancel();
    controllers.pop()!.abort();
    expect((await open()).status).toBe(200);
    for (const c of controllers) c.abort();
  });
});

describe("accounts", () => {
  it("public sign-up is off: better-auth's sign-up endpoint does not make accounts", async () => {
    const res = await authRoute.POST(
      new Request(`${BASE}/api/auth/sign-up/email`, {
        method: "POST",
        headers: { "content-type": "application/json", origin: BASE },
        body: JSON.stringify({ email: "self@example.test", password: PASSWORD, name: "Self", role: "admin" }),
      }),
    );
    expect(res.status).toBeGreaterThanOrEqual(400);
    expect(await stack.db.user.findUnique({ where: { email: "self@example.test" } })).toBeNull();
  });

  it("an invitation makes an account with the invitation's role and signs it in; the link works once", async () => {
    const { token } = await createInvitation(stack.db, { email: "Invited@Example.test", role: "instructor" }, users.admin.id);
    const accept = (body: object) =>
      acceptRoute.POST(
        new Request(`${BASE}/api/invitations/accept`, {
          method: "POST",
          headers: { "content-type": "application/json", origin: ORIGIN },
          body: JSON.stringify(body),
        }),
        {},
      );
    const bad = await accept({ token, name: "", password: "short" });
    expect(bad.status).toBe(400);
    const res = await accept({ token, name: "Invited", password: PASSWORD, role: "admin" });
    expect(res.status).toBe(201);
    const user = await stack.db.user.findUniqueOrThrow({ where: { email: "invited@example.test" } });
    expect(user.role).toBe("instructor");
    const cookie = res.headers
      .getSetCookie()
      .map((c) => c.split(";")[0])
      .join("; ");
    const session = await stack.auth.api.getSession({ headers: new Headers({ cookie }) });
    expect(session?.user.id).toBe(user.id);
    expect((await accept({ token, name: "Again", password: PASSWORD })).status).toBe(410);
    expect((await accept({ token: "x".repeat(43), name: "Nobody", password: PASSWORD })).status).toBe(410);
  });

  it("a revoked invitation is refused (410) and makes no account", async () => {
    const { token, invitation } = await createInvitation(stack.db, { email: "revoked@example.test", role: "learner" }, users.admin.id, {
      secret: stack.secret,
    });
    expect(
      (
        await invitationRoute.DELETE(
          request("admin", `/api/invitations/${invitation.id}`, { method: "DELETE" }),
          params({ id: invitation.id }),
        )
      ).status,
    ).toBe(200);
    const res = await acceptRoute.POST(
      new Request(`${BASE}/api/invitations/accept`, {
        method: "POST",
        headers: { "content-type": "application/json", origin: ORIGIN },
        body: JSON.stringify({ token, name: "Revoked", password: PASSWORD }),
      }),
      {},
    );
    expect(res.status).toBe(410);
    expect(await stack.db.user.findUnique({ where: { email: "revoked@example.test" } })).toBeNull();
  });

  it("GET /api/invitations lists open invitations with their link again", async () => {
    const { token } = await createInvitation(stack.db, { email: "listed@example.test", role: "learner" }, users.admin.id, {
      secret: stack.secret,
    });
    const res = await invitationsRoute.GET(request("admin", "/api/invitations"), {});
    const { invitations } = (await res.json()) as { invitations: { email: string; open: boolean; url: string | null }[] };
    expect(invitations.find((i) => i.email === "listed@example.test")).toMatchObject({
      open: true,
      url: expect.stringMatching(new RegExp(`/invite/${token}$`)),
    });
  });

  it("an expired invitation is refused", async () => {
    const past = new Date(Date.now() - 30 * 24 * 60 * 60 * 1000);
    const { token } = await createInvitation(stack.db, { email: "late@example.test", role: "learner", days: 1 }, null, { now: past });
    const res = await acceptRoute.POST(
      new Request(`${BASE}/api/invitations/accept`, {
        method: "POST",
        headers: { "content-type": "application/json", origin: ORIGIN },
        body: JSON.stringify({ token, name: "Late", password: PASSWORD }),
      }),
      {},
    );
    expect(res.status).toBe(410);
  });

  it("nobody can change their own role through better-auth", async () => {
    const res = await authRoute.POST(
      new Request(`${BASE}/api/auth/update-user`, {
        method: "POST",
        headers: { "content-type": "application/json", origin: BASE, cookie: cookies.owner },
        body: JSON.stringify({ role: "admin" }),
      }),
    );
    expect(res.status).toBeGreaterThanOrEqual(400);
    expect((await stack.db.user.findUniqueOrThrow({ where: { id: users.owner.id } })).role).toBe("learner");
  });
});

/** Terminal socket: who connects (cookie) × which token (issued to whom, which mode). */
const SOCKETS: { name: string; actor: Actor; token: () => string; expect: number | "write" | "read" }[] = [
  {
    name: "no sign-in, the owner's write token",
    actor: "anonymous",
    token: () => tokenFor("owner", "write"),
    expect: CloseCode.unauthorized,
  },
  { name: "owner, own write token", actor: "owner", token: () => tokenFor("owner", "write"), expect: "write" },
  { name: "owner, own read token", actor: "owner", token: () => tokenFor("owner", "read"), expect: "read" },
  // The POST …/tabs row above opened node01 #2 for the owner; #9 was never opened.
  {
    name: "owner, write token for an open extra tab (node01 #2)",
    actor: "owner",
    token: () => signTerminalToken(stack.secret, { sid: sessionId, m: "node01", n: 2, mode: "write", sub: users.owner.id }),
    expect: "write",
  },
  {
    name: "owner, token for a tab that is not open (node01 #9)",
    actor: "owner",
    token: () => signTerminalToken(stack.secret, { sid: sessionId, m: "node01", n: 9, mode: "write", sub: users.owner.id }),
    expect: CloseCode.notFound,
  },
  {
    name: "cohort instructor, read token for the owner's extra tab",
    actor: "cohortInstructor",
    token: () => signTerminalToken(stack.secret, { sid: sessionId, m: "node01", n: 2, mode: "read", sub: users.cohortInstructor.id }),
    expect: "read",
  },
  { name: "other learner, the owner's token", actor: "otherLearner", token: () => tokenFor("owner", "write"), expect: CloseCode.forbidden },
  {
    name: "other learner, a read token in their name",
    actor: "otherLearner",
    token: () => tokenFor("otherLearner", "read"),
    expect: CloseCode.forbidden,
  },
  { name: "cohort instructor, read token", actor: "cohortInstructor", token: () => tokenFor("cohortInstructor", "read"), expect: "read" },
  {
    name: "cohort instructor, write token",
    actor: "cohortInstructor",
    token: () => tokenFor("cohortInstructor", "write"),
    expect: CloseCode.forbidden,
  },
  {
    name: "other instructor, read token",
    actor: "otherInstructor",
    token: () => tokenFor("otherInstructor", "read"),
    expect: CloseCode.forbidden,
  },
  { name: "admin, read token", actor: "admin", token: () => tokenFor("admin", "read"), expect: "read" },
  { name: "admin, write token", actor: "admin", token: () => tokenFor("admin", "write"), expect: CloseCode.forbidden },
];

function tokenFor(actor: Exclude<Actor, "anonymous">, mode: "write" | "read"): string {
  return signTerminalToken(stack.secret, { sid: sessionId, m: "node01", mode, sub: users[actor].id });
}

describe("terminal socket × actors", () => {
  for (const row of SOCKETS) {
    it(`${row.name} → ${row.expect}`, async () => {
      const headers: Record<string, string> = cookies[row.actor] ? { cookie: cookies[row.actor] } : {};
      const client = await TerminalTestClient.connect(stack.wsUrl, { token: row.token() }, headers);
      if (typeof row.expect === "number") {
        expect((await client.waitForClose()).code).toBe(row.expect);
        return;
      }
      await client.waitFor((c) => c.messages.some((m) => m.type === "ready"), 20_000, "ready");
      expect(client.messages.find((m) => m.type === "ready")).toMatchObject({ mode: row.expect });
      await client.waitFor((c) => c.messages.some((m) => m.type === "status" && m.state === "connected"), 20_000, "connected");
      const marker = `authz-${row.actor}-${row.expect}-$((6*7))`;
      client.input(`echo ${marker}\r`);
      if (row.expect === "write") await client.waitForText(`authz-${row.actor}-write-42`);
      else {
        await new Promise((r) => setTimeout(r, 1000));
        expect(client.text()).not.toContain(`authz-${row.actor}-read-42`);
      }
      await client.close();
    });
  }

  it("a watcher sees what the owner types", async () => {
    const owner = await TerminalTestClient.connect(stack.wsUrl, { token: tokenFor("owner", "write") }, { cookie: cookies.owner });
    const watcher = await TerminalTestClient.connect(
      stack.wsUrl,
      { token: tokenFor("cohortInstructor", "read") },
      { cookie: cookies.cohortInstructor },
    );
    try {
      await owner.waitFor((c) => c.messages.some((m) => m.type === "status" && m.state === "connected"), 20_000, "connected");
      // Watching from now on ("ready" comes as the viewer is attached): what the owner types next
      // reaches the watcher as output, whatever the watcher's first view was (replay or snapshot).
      await watcher.waitFor((c) => c.messages.some((m) => m.type === "ready"), 20_000, "ready");
      owner.input("echo watched-$((40+2))\r");
      await watcher.waitForText("watched-42");
    } finally {
      // A failure here must not leave sockets counted against the next tests' limits.
      await Promise.all([owner.close(), watcher.close()]);
    }
  });

  it("a watcher is announced to the learner (session events) and audited; leaving clears the notice", async () => {
    const seen: (readonly string[])[] = [];
    const off = stack.bus.onWatchers(sessionId, (names) => seen.push(names));
    const before = await stack.db.auditLog.count({
      where: { action: "session.watch", targetId: sessionId, actorId: users.cohortInstructor.id },
    });
    const watcher = await TerminalTestClient.connect(
      stack.wsUrl,
      { token: tokenFor("cohortInstructor", "read") },
      { cookie: cookies.cohortInstructor },
    );
    await watcher.waitFor((c) => c.messages.some((m) => m.type === "ready"), 20_000, "ready");
    await expect.poll(() => stack.watchers.watchers(sessionId)).toEqual(["cohortInstructor"]);
    await expect.poll(() => seen.at(-1)).toEqual(["cohortInstructor"]);
    await watcher.close();
    await expect.poll(() => seen.at(-1)).toEqual([]);
    off();
    // The audit row is written as the watch starts, beside the socket's own work: poll for it.
    // At least one more: an earlier test's watch may still be writing its own row when `before` is read.
    await expect
      .poll(() => stack.db.auditLog.count({ where: { action: "session.watch", targetId: sessionId, actorId: users.cohortInstructor.id } }))
      .toBeGreaterThanOrEqual(before + 1);
  });

  it("the cohort's event stream tells the dashboard when a learner's session changes (and not for other cohorts)", async () => {
    const controller = new AbortController();
    const res = await cohortEventsRoute.GET(
      request("cohortInstructor", `/api/cohorts/${cohortId}/events`, { signal: controller.signal }),
      params({ id: cohortId }),
    );
    const reader = res.body!.getReader();
    let text = new TextDecoder().decode((await reader.read()).value);
    stack.bus.publishSessionChange(endableSessionId); // another cohort's session: not told
    stack.bus.publishSessionChange(sessionId);
    while (!text.includes("event: changed")) text += new TextDecoder().decode((await reader.read()).value);
    expect(text).toContain(`"sessionId":"${sessionId}"`);
    expect(text).not.toContain(endableSessionId);
    controller.abort();
    await reader.cancel();
  });

  it("a socket from another origin is refused at the upgrade", async () => {
    await expect(
      TerminalTestClient.connect(
        stack.wsUrl,
        { token: tokenFor("owner", "write") },
        { cookie: cookies.owner, origin: "http://evil.example" },
      ),
    ).rejects.toThrow(/HTTP 403/);
  });

  it("a socket with no Origin is refused at the upgrade (browsers always send one)", async () => {
    await expect(
      TerminalTestClient.connect(stack.wsUrl, { token: tokenFor("owner", "write") }, { cookie: cookies.owner, origin: "" }),
    ).rejects.toThrow(/HTTP 403/);
  });

  it("a user's 25th terminal socket is refused (4429) while 24 are open; closing one frees a slot", async () => {
    const clients: TerminalTestClient[] = [];
    try {
      for (let i = 0; i < 24; i++)
        clients.push(await TerminalTestClient.connect(stack.wsUrl, { token: tokenFor("owner", "read") }, { cookie: cookies.owner }));
      await Promise.all(clients.map((c) => c.waitFor((x) => x.messages.some((m) => m.type === "ready"), 30_000, "ready")));
      const extra = await TerminalTestClient.connect(stack.wsUrl, { token: tokenFor("owner", "read") }, { cookie: cookies.owner });
      expect((await extra.waitForClose()).code).toBe(CloseCode.tooManySockets);
      await clients.pop()!.close();
      const again = await TerminalTestClient.connect(stack.wsUrl, { token: tokenFor("owner", "read") }, { cookie: cookies.owner });
      clients.push(again);
      await again.waitFor((x) => x.messages.some((m) => m.type === "ready"), 30_000, "ready");
    } finally {
      await Promise.all(clients.map((c) => c.close()));
    }
  }, 90_000);

  it("signing out ends terminal access on the next connect, even with an unexpired token", async () => {
    const cookie = await signIn(users.owner.email);
    const signOut = await stack.auth.api.signOut({ headers: new Headers({ cookie }), asResponse: true });
    expect(signOut.status).toBe(200);
    const client = await TerminalTestClient.connect(stack.wsUrl, { token: tokenFor("owner", "write") }, { cookie });
    expect((await client.waitForClose()).code).toBe(CloseCode.unauthorized);
  });
});

/** Reads an SSE body until its text matches `pattern` (or the stream ends); returns the text so far. */
async function readUntil(reader: ReadableStreamDefaultReader<Uint8Array>, pattern: RegExp, timeoutMs = 15_000): Promise<string> {
  let text = "";
  const deadline = Date.now() + timeoutMs;
  while (!pattern.test(text)) {
    const left = deadline - Date.now();
    if (left <= 0) throw new Error(`timed out waiting for ${pattern} in ${JSON.stringify(text)}`);
    const chunk = await Promise.race([reader.read(), new Promise<null>((r) => setTimeout(() => r(null), left))]);
    if (chunk === null) continue;
    if (chunk.done) break;
    text += new TextDecoder().decode(chunk.value);
  }
  return text;
}

/** A terminal socket attached (ready, shell connected) with `cookie`, for the token `sub` holds on `sid`. */
/** A cohort of one learner and one instructor (new accounts named after `prefix`), both signed in. */
async function cohortOfTwo(prefix: string, name: string, labs: string[]) {
  const make = (key: string, role: "learner" | "instructor") =>
    createUserWithPassword(stack.db, stack.auth, { email: `${key}@example.test`, name: key, role, password: PASSWORD });
  const learner = await make(`${prefix}-learner`, "learner");
  const teacher = await make(`${prefix}-teacher`, "instructor");
  const cohort = await stack.db.cohort.create({ data: { name, labs } });
  await stack.db.cohortMember.createMany({
    data: [
      { cohortId: cohort.id, userId: learner.id, role: "learner" },
      { cohortId: cohort.id, userId: teacher.id, role: "instructor" },
    ],
  });
  return { learner, teacher, cohort, teacherCookie: await signIn(teacher.email), learnerCookie: await signIn(learner.email) };
}

async function attached(sid: string, sub: string, mode: "write" | "read", cookie: string): Promise<TerminalTestClient> {
  const client = await TerminalTestClient.connect(
    stack.wsUrl,
    { token: signTerminalToken(stack.secret, { sid, m: "node01", mode, sub }) },
    { cookie },
  );
  await client.waitFor((c) => c.messages.some((m) => m.type === "ready"), 20_000, "ready");
  return client;
}

/** An open SSE response's reader, after its first event. */
async function openStream(res: Response): Promise<ReadableStreamDefaultReader<Uint8Array>> {
  expect(res.status).toBe(200);
  const reader = res.body!.getReader();
  await reader.read();
  return reader;
}

describe("access drift: live sockets and streams close at once, with a reason", () => {
  it("an ended cohort's instructor gets 403 for its dashboard, events, watch tokens and session events; open ones close with cohortEnded", async () => {
    const { learner, teacher, cohort, teacherCookie, learnerCookie } = await cohortOfTwo("drift", "CKA drift", ["preinstall-checks"]);
    // A session of a lab outside the cohort: ending the cohort does not end it, so what closes the
    // instructor's socket is the recheck of their access, not the session's end.
    const sid = await stack.startSession(learner.id, LAB);
    const asTeacher = (path: string, signal?: AbortSignal) => {
      const headers = new Headers({ cookie: teacherCookie, origin: ORIGIN });
      return new Request(`${BASE}${path}`, { headers, signal });
    };
    const watch = await attached(sid, teacher.id, "read", teacherCookie);
    const own = await attached(sid, learner.id, "write", learnerCookie);
    const cohortEvents = await openStream(
      await cohortEventsRoute.GET(asTeacher(`/api/cohorts/${cohort.id}/events`), params({ id: cohort.id })),
    );
    const sessionEvents = await openStream(await eventsRoute.GET(asTeacher(`/api/sessions/${sid}/events`), params({ id: sid })));
    expect((await tokensRoute.GET(asTeacher(`/api/sessions/${sid}/terminal-tokens`), params({ id: sid }))).status).toBe(200);

    const end = await cohortEndRoute.POST(request("admin", `/api/cohorts/${cohort.id}/end`, { method: "POST" }), params({ id: cohort.id }));
    expect(end.status).toBe(200);

    expect(await watch.waitForClose()).toEqual({ code: CloseCode.forbidden, reason: "cohortEnded" });
    expect(await readUntil(cohortEvents, /event: revoked/)).toContain(`data: {"reason":"cohortEnded"}`);
    expect(await readUntil(sessionEvents, /event: revoked/)).toContain(`data: {"reason":"cohortEnded"}`);
    for (const [route, res] of [
      ["dashboard", await cohortDashboardRoute.GET(asTeacher(`/api/cohorts/${cohort.id}/dashboard`), params({ id: cohort.id }))],
      ["cohort events", await cohortEventsRoute.GET(asTeacher(`/api/cohorts/${cohort.id}/events`), params({ id: cohort.id }))],
      ["terminal tokens", await tokensRoute.GET(asTeacher(`/api/sessions/${sid}/terminal-tokens`), params({ id: sid }))],
      ["session events", await eventsRoute.GET(asTeacher(`/api/sessions/${sid}/events`), params({ id: sid }))],
    ] as const) {
      expect([route, res.status, ((await res.json()) as { code: string }).code]).toEqual([route, 403, "cohortEnded"]);
    }
    const again = await TerminalTestClient.connect(
      stack.wsUrl,
      { token: signTerminalToken(stack.secret, { sid, m: "node01", mode: "read", sub: teacher.id }) },
      { cookie: teacherCookie },
    );
    expect(await again.waitForClose()).toEqual({ code: CloseCode.forbidden, reason: "cohortEnded" });
    // Admins still see the ended cohort; the learner's own terminal was never touched.
    expect(
      (await cohortDashboardRoute.GET(request("admin", `/api/cohorts/${cohort.id}/dashboard`), params({ id: cohort.id }))).status,
    ).toBe(200);
    await own.waitFor((c) => c.messages.some((m) => m.type === "status" && m.state === "connected"), 20_000, "connected");
    own.input("echo still-$((6*7))\r");
    await own.waitForText("still-42");
    expect(own.closed).toBeNull();
    await own.close();
  }, 90_000);

  it("signing out closes that sign-in's terminal sockets (4401 signedOut) and event streams at once; another sign-in's stay open", async () => {
    const cookie = await signIn(users.owner.email);
    const mine = await attached(sessionId, users.owner.id, "write", cookie);
    const other = await attached(sessionId, users.owner.id, "write", cookies.owner);
    const stream = await openStream(
      await eventsRoute.GET(new Request(`${BASE}/api/sessions/${sessionId}/events`, { headers: { cookie } }), params({ id: sessionId })),
    );
    const signOut = await stack.auth.api.signOut({ headers: new Headers({ cookie }), asResponse: true });
    expect(signOut.status).toBe(200);
    expect(await mine.waitForClose()).toEqual({ code: CloseCode.unauthorized, reason: "signedOut" });
    expect(await readUntil(stream, /event: revoked/)).toContain(`data: {"reason":"signedOut"}`);
    await other.waitFor((c) => c.messages.some((m) => m.type === "status" && m.state === "connected"), 20_000, "connected");
    other.input("echo other-sign-in-$((6*7))\r");
    await other.waitForText("other-sign-in-42");
    expect(other.closed).toBeNull();
    await other.close();
  }, 60_000);

  it("removing a learner closes the instructors' watch sockets; removing the instructor closes their dashboard stream (accessRevoked)", async () => {
    const { learner, teacher, cohort, teacherCookie, learnerCookie } = await cohortOfTwo("removed", "CKA removal", [LAB]);
    const sid = await stack.startSession(learner.id, "removal-lab");
    const watch = await attached(sid, teacher.id, "read", teacherCookie);
    const own = await attached(sid, learner.id, "write", learnerCookie);
    const dashboard = await openStream(
      await cohortEventsRoute.GET(
        new Request(`${BASE}/api/cohorts/${cohort.id}/events`, { headers: { cookie: teacherCookie } }),
        params({ id: cohort.id }),
      ),
    );
    const remove = (userId: string) =>
      cohortMemberRoute.DELETE(
        request("admin", `/api/cohorts/${cohort.id}/members/${userId}`, { method: "DELETE" }),
        params({ id: cohort.id, userId }),
      );

    expect((await remove(learner.id)).status).toBe(200);
    expect(await watch.waitForClose()).toEqual({ code: CloseCode.forbidden, reason: "accessRevoked" });
    // The learner still owns their session (ownership is not membership): their terminal stays.
    await own.waitFor((c) => c.messages.some((m) => m.type === "status" && m.state === "connected"), 20_000, "connected");
    own.input("echo mine-$((6*7))\r");
    await own.waitForText("mine-42");
    expect(own.closed).toBeNull();

    expect((await remove(teacher.id)).status).toBe(200);
    const text = await readUntil(dashboard, /event: revoked/);
    expect(text).toContain(`data: {"reason":"accessRevoked"}`);
    await own.close();
  }, 90_000);
});
