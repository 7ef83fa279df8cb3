/**
 * Cohorts: a class with dates, labs, a session time limit and an idle timeout; learners and
 * instructors as members. Plain functions over the database; the admin API and pages call them
 * after the guard has said who may.
 */
import { z } from "zod";
import { MAX_EXAM_MINUTES } from "../labs/schema";
import type { Db } from "../db/client";
import type { EventBus } from "../events/bus";
import type { MachineProvider } from "../machines/provider";
import { endSession } from "../sessions/lab-sessions";
import type { TerminalRegistry } from "../terminal/registry";
import { recordAudit } from "../audit";

/** A lab slug as the catalog names them (folder names under labs/). */
export const LabSlug = z.string().regex(/^[a-z0-9][a-z0-9-]{0,63}$/);
/** Most labs one cohort takes. */
const MAX_COHORT_LABS = 50;

const optionalDate = z.preprocess((v) => (v === "" || v === undefined ? null : v), z.coerce.date().nullable());
const optionalMinutes = (max: number) =>
  z.preprocess((v) => (v === "" || v === undefined ? null : v), z.coerce.number().int().min(1).max(max).nullable());

export const CohortInput = z
  .object({
    name: z.string().trim().min(1).max(100).describe("Shown to admins and instructors"),
    startsAt: optionalDate.optional().describe("When class starts"),
    endsAt: optionalDate.optional().describe("When class ends"),
    labs: z.array(LabSlug).max(MAX_COHORT_LABS).default([]).describe("Lab slugs, in course order"),
    sessionMinutes: optionalMinutes(24 * 60)
      .optional()
      .describe("Time limit of a lab session, minutes"),
    idleMinutes: optionalMinutes(24 * 60)
      .optional()
      .describe("Inactivity before a session is suspended, minutes"),
    examAttempts: z.coerce.number().int().min(1).max(10).optional().describe("Sittings per learner of each exam, within startsAt..endsAt"),
    examMinutes: optionalMinutes(MAX_EXAM_MINUTES).optional().describe("An exam's time for this cohort, minutes (none: the exam's own)"),
  })
  .refine((c) => !c.startsAt || !c.endsAt || c.endsAt > c.startsAt, { path: ["endsAt"], message: "must be after startsAt" })
  .refine((c) => new Set(c.labs).size === c.labs.length, { path: ["labs"], message: "a lab is listed twice" });
export type CohortInput = z.input<typeof CohortInput>;

export const CohortId = z.string().min(1).max(64);
/** A row id from a URL (cuid, better-auth id): bounded, and without NUL, which PostgreSQL text refuses. */
export const RowId = z
  .string()
  .min(1)
  .max(64)
  .regex(/^[^\u0000]+$/);

export const MemberInput = z.object({
  email: z.string().trim().toLowerCase().email().max(254),
  role: z.enum(["learner", "instructor"]),
});

export const ExtendInput = z.object({
  minutes: z.coerce
    .number()
    .int()
    .min(1)
    .max(24 * 60),
});

/** What the catalog must answer: whether a lab exists. */
export interface LabLookup {
  get(slug: string): Promise<unknown>;
}

export class CohortNotFoundError extends Error {
  readonly code = "noSuchCohort";
  constructor() {
    super("no such cohort");
  }
}

/** A domain refusal with a message key under "errors" (and the HTTP status the API answers). */
export class CohortRuleError extends Error {
  constructor(
    readonly code:
      "unknownLab" | "cohortEnded" | "provisionRunning" | "noSuchUser" | "wrongUserRole" | "sessionNotLive" | "sessionHasNoLimit",
    readonly status: 404 | 409 | 422,
    message: string,
  ) {
    super(message);
  }
}

export interface CohortView {
  id: string;
  name: string;
  startsAt: Date | null;
  endsAt: Date | null;
  labs: string[];
  sessionMinutes: number | null;
  idleMinutes: number | null;
  examAttempts: number;
  examMinutes: number | null;
  endedAt: Date | null;
  createdAt: Date;
}

const COHORT_VIEW = {
  id: true,
  name: true,
  startsAt: true,
  endsAt: true,
  labs: true,
  sessionMinutes: true,
  idleMinutes: true,
  examAttempts: true,
  examMinutes: true,
  endedAt: true,
  createdAt: true,
} as const;

async function checkLabs(labs: LabLookup, slugs: readonly string[]): Promise<void> {
  for (const slug of slugs) {
    const ok = await labs.get(slug).then(
      () => true,
      () => false,
    );
    if (!ok) throw new CohortRuleError("unknownLab", 422, `no lab "${slug}" in the catalog`);
  }
}

export async function createCohort(db: Db, labs: LabLookup, input: CohortInput, actorId: string | null): Promise<CohortView> {
  const data = CohortInput.parse(input);
  await checkLabs(labs, data.labs);
  return db.$transaction(async (tx) => {
    const cohort = await tx.cohort.create({ data, select: COHORT_VIEW });
    await recordAudit(tx, { actorId, action: "cohort.create", targetType: "cohort", targetId: cohort.id, detail: { name: cohort.name } });
    return cohort;
  });
}

/** What a cohort edit needs besides the input: the platform's time limit, and who hears of moved deadlines. */
export interface UpdateCohortOptions {
  /** The time limit of a session whose cohort sets none, minutes (LABDECK_SESSION_MINUTES). */
  platformSessionMinutes: number;
  bus?: Pick<EventBus, "publishSessionChange">;
}

/**
 * Edits a cohort. Its limits reach its running sessions too: the idle time is read from the cohort
 * at every sweep (lab-sessions.ts sweepSessions), and a new time limit moves the deadline of its
 * ready and suspended sessions in the same transaction (moveDeadlines).
 */
export async function updateCohort(
  db: Db,
  labs: LabLookup,
  id: string,
  input: CohortInput,
  actorId: string | null,
  options: UpdateCohortOptions,
): Promise<CohortView> {
  const data = CohortInput.parse(input);
  const cohort = await getCohortOrThrow(db, id);
  if (cohort.endedAt) throw new CohortRuleError("cohortEnded", 409, "the cohort has ended");
  await checkLabs(labs, data.labs);
  const { updated, moved } = await db.$transaction(async (tx) => {
    // Locked: a concurrent edit moves deadlines from this one's limit, not from the same old one.
    const [before] = await tx.$queryRaw<{ sessionMinutes: number | null }[]>`
      SELECT "sessionMinutes" FROM "Cohort" WHERE "id" = ${id} FOR UPDATE`;
    const updated = await tx.cohort.update({ where: { id }, data, select: COHORT_VIEW });
    const moved = await moveDeadlines(tx, id, before?.sessionMinutes ?? null, updated.sessionMinutes, options.platformSessionMinutes);
    await recordAudit(tx, { actorId, action: "cohort.update", targetType: "cohort", targetId: id });
    return { updated, moved };
  });
  await Promise.all(moved.map((sessionId) => options.bus?.publishSessionChange(sessionId)));
  return updated;
}

/**
 * A cohort's time limit changed from `from` to `to` minutes (null: the platform's): the deadline
 * of each of its ready and suspended sessions moves by the difference, so time an instructor
 * added stays added; a session made ahead of class without a limit gets one, counted from when it
 * became ready or class starts. A deadline moved into the past ends the session at the next
 * sweep. A session still starting takes the cohort's limit when it becomes ready. Returns the
 * sessions whose deadline moved.
 */
async function moveDeadlines(
  tx: Pick<Db, "$queryRaw">,
  cohortId: string,
  from: number | null,
  to: number | null,
  platformMinutes: number,
): Promise<string[]> {
  if (from === to) return [];
  const shift = (to ?? platformMinutes) - (from ?? platformMinutes);
  const rows = await tx.$queryRaw<{ id: string }[]>`
    UPDATE "LabSession" s
    SET "expiresAt" = CASE
      WHEN s."expiresAt" IS NOT NULL THEN s."expiresAt" + make_interval(mins => ${shift}::int)
      ELSE GREATEST(s."readyAt", c."startsAt") + make_interval(mins => ${to}::int)
    END
    FROM "Cohort" c
    WHERE c."id" = s."cohortId" AND s."cohortId" = ${cohortId} AND s."state" IN ('ready', 'suspended') AND NOT s."gradedAtEnd"
      AND (s."expiresAt" IS NOT NULL OR (${to}::int IS NOT NULL AND s."readyAt" IS NOT NULL))
    RETURNING s."id"`;
  return rows.map((r) => r.id);
}

export async function getCohortOrThrow(db: Db, id: string): Promise<CohortView> {
  if (!CohortId.safeParse(id).success) throw new CohortNotFoundError();
  const cohort = await db.cohort.findUnique({ where: { id }, select: COHORT_VIEW });
  if (!cohort) throw new CohortNotFoundError();
  return cohort;
}

export interface CohortListItem extends CohortView {
  learners: number;
  instructors: number;
}

/** Every cohort (admins), or the cohorts an instructor teaches. Newest first. */
export async function listCohorts(db: Db, filter: { instructorId?: string } = {}): Promise<CohortListItem[]> {
  const rows = await db.cohort.findMany({
    where: filter.instructorId ? { members: { some: { userId: filter.instructorId, role: "instructor" } } } : {},
    orderBy: { createdAt: "desc" },
    select: { ...COHORT_VIEW, members: { select: { role: true } } },
  });
  return rows.map(({ members, ...c }) => ({
    ...c,
    learners: members.filter((m) => m.role === "learner").length,
    instructors: members.filter((m) => m.role === "instructor").length,
  }));
}

export interface MemberView {
  userId: string;
  email: string;
  name: string;
  role: "learner" | "instructor";
  addedAt: Date;
}

export interface PendingInvitationView {
  id: string;
  email: string;
  role: string;
  expiresAt: Date;
}

export async function cohortMembers(db: Db, cohortId: string): Promise<{ members: MemberView[]; pending: PendingInvitationView[] }> {
  const [members, pending] = await Promise.all([
    db.cohortMember.findMany({
      where: { cohortId },
      orderBy: [{ role: "asc" }, { addedAt: "asc" }],
      select: { role: true, addedAt: true, user: { select: { id: true, email: true, name: true } } },
    }),
    db.invitation.findMany({
      where: { cohortId, usedAt: null, revokedAt: null, expiresAt: { gt: new Date() } },
      orderBy: { createdAt: "asc" },
      select: { id: true, email: true, role: true, expiresAt: true },
    }),
  ]);
  return {
    members: members.map((m) => ({ userId: m.user.id, email: m.user.email, name: m.user.name, role: m.role, addedAt: m.addedAt })),
    pending,
  };
}

/** How a member came in (audit detail): an admin by email, a CSV row, or the person's own invitation link. */
export type MemberVia = "admin" | "csv" | "invitation";

/** A client or a transaction: membership writes happen in the caller's transaction when there is one. */
type MemberDb = Pick<Db, "cohortMember" | "invitation" | "auditLog">;

/**
 * THE one place a user becomes a cohort member (admin by email, CSV import, invitation link):
 * writes the membership with its audit row and closes the user's other open invitations to the
 * cohort (they are moot now, and would otherwise be listed as pending forever). An existing
 * membership with the same role is left as it is (`alreadyMember`).
 */
export async function putMember(
  tx: MemberDb,
  cohortId: string,
  user: { id: string; email: string },
  role: "learner" | "instructor",
  actorId: string | null,
  via: MemberVia,
  now = new Date(),
): Promise<{ role: "learner" | "instructor"; addedAt: Date; alreadyMember: boolean }> {
  const existing = await tx.cohortMember.findUnique({ where: { cohortId_userId: { cohortId, userId: user.id } } });
  if (existing?.role === role) return { role, addedAt: existing.addedAt, alreadyMember: true };
  const member = await tx.cohortMember.upsert({
    where: { cohortId_userId: { cohortId, userId: user.id } },
    create: { cohortId, userId: user.id, role, addedAt: now },
    update: { role },
  });
  await tx.invitation.updateMany({ where: { cohortId, email: user.email, usedAt: null, revokedAt: null }, data: { revokedAt: now } });
  await recordAudit(
    tx,
    { actorId, action: "cohort.member.add", targetType: "cohort", targetId: cohortId, detail: { userId: user.id, role, via } },
    now,
  );
  return { role: member.role, addedAt: member.addedAt, alreadyMember: false };
}

/**
 * Adds an existing user to a cohort (assigning an instructor, or a learner who already has an
 * account). An instructor member must have the instructor role; a learner member the learner role.
 */
export async function addMember(
  db: Db,
  cohortId: string,
  input: z.input<typeof MemberInput>,
  actorId: string | null,
): Promise<MemberView & { alreadyMember: boolean }> {
  const data = MemberInput.parse(input);
  const cohort = await getCohortOrThrow(db, cohortId);
  if (cohort.endedAt) throw new CohortRuleError("cohortEnded", 409, "the cohort has ended");
  const user = await db.user.findUnique({ where: { email: data.email }, select: { id: true, email: true, name: true, role: true } });
  if (!user) throw new CohortRuleError("noSuchUser", 404, `no account with ${data.email}`);
  if (user.role !== data.role) throw new CohortRuleError("wrongUserRole", 422, `${data.email} is a ${user.role}, not a ${data.role}`);
  return db.$transaction(async (tx) => {
    const member = await putMember(tx, cohortId, user, data.role, actorId, "admin");
    return { userId: user.id, email: user.email, name: user.name, ...member };
  });
}

export class MemberNotFoundError extends Error {
  readonly code = "noSuchMember";
  constructor() {
    super("no such member in this cohort");
  }
}

/**
 * THE one place a member leaves a cohort (learner or instructor), with its audit row. Then an
 * access notice for everyone whose reach it changed — the member, and for a learner the cohort's
 * instructors (who watched them) — so every process closes the sockets and event streams that
 * relied on the membership. Throws MemberNotFoundError when the user is not a member.
 */
export async function removeMember(
  db: Db,
  cohortId: string,
  userId: string,
  actorId: string | null,
  bus?: Pick<EventBus, "publishAccessChange">,
): Promise<{ userId: string; role: "learner" | "instructor" }> {
  await getCohortOrThrow(db, cohortId);
  if (!RowId.safeParse(userId).success) throw new MemberNotFoundError();
  const removed = await db.$transaction(async (tx) => {
    const member = await tx.cohortMember.findUnique({ where: { cohortId_userId: { cohortId, userId } }, select: { role: true } });
    if (!member) throw new MemberNotFoundError();
    const removed = await tx.cohortMember.deleteMany({ where: { cohortId, userId } });
    if (removed.count !== 1) throw new MemberNotFoundError();
    await recordAudit(tx, {
      actorId,
      action: "cohort.member.remove",
      targetType: "cohort",
      targetId: cohortId,
      detail: { userId, role: member.role },
    });
    return { userId, role: member.role };
  });
  if (bus) {
    const instructors =
      removed.role === "learner"
        ? await db.cohortMember.findMany({ where: { cohortId, role: "instructor" }, select: { userId: true } })
        : [];
    await Promise.all([userId, ...instructors.map((i) => i.userId)].map((u) => bus.publishAccessChange(u)));
  }
  return removed;
}

/** The live (not ended) lab sessions of a cohort's learners for the cohort's labs. */
export async function cohortLiveSessions(db: Db, cohortId: string) {
  const cohort = await getCohortOrThrow(db, cohortId);
  const learners = await db.cohortMember.findMany({ where: { cohortId, role: "learner" }, select: { userId: true } });
  return db.labSession.findMany({
    where: { learnerId: { in: learners.map((l) => l.userId) }, labSlug: { in: cohort.labs }, state: { not: "ended" } },
    select: { id: true, learnerId: true, labSlug: true, state: true, expiresAt: true },
  });
}

export interface EndCohortDeps {
  db: Db;
  provider: MachineProvider;
  terminals?: TerminalRegistry;
  bus?: EventBus;
}

/**
 * Ends a cohort: marks it ended (final) and ends every live session of its learners for its labs
 * through endSession (the provider tears the machines down). A session whose teardown fails is
 * reported and stays `ending`: the reconciler retries it until the provider succeeds. Its
 * terminals close either way.
 */
export async function endCohort(
  deps: EndCohortDeps,
  cohortId: string,
  actorId: string | null,
): Promise<{ ended: string[]; failed: { sessionId: string; message: string }[] }> {
  const { db } = deps;
  await getCohortOrThrow(db, cohortId);
  await db.cohort.updateMany({ where: { id: cohortId, endedAt: null }, data: { endedAt: new Date() } });
  const sessions = await cohortLiveSessions(db, cohortId);
  const ended: string[] = [];
  const failed: { sessionId: string; message: string }[] = [];
  for (const s of sessions) {
    try {
      await endSession(db, deps.provider, s.id, "admin");
      ended.push(s.id);
    } catch (error) {
      failed.push({ sessionId: s.id, message: (error as Error).message });
    } finally {
      await deps.terminals?.closeSession(s.id);
      await deps.bus?.publishSessionChange(s.id);
    }
  }
  await recordAudit(db, {
    actorId,
    action: "cohort.end",
    targetType: "cohort",
    targetId: cohortId,
    detail: { ended: ended.length, failed: failed.length },
  });
  if (deps.bus) {
    // Instructors lose the cohort's dashboards and watch sockets; learners' terminals of the
    // ended sessions close on every process (this one's closed above).
    const members = await db.cohortMember.findMany({ where: { cohortId }, select: { userId: true } });
    await Promise.all(members.map((m) => deps.bus!.publishAccessChange(m.userId)));
  }
  return { ended, failed };
}

/** Gives a learner's live session `minutes` more before it expires. */
export async function extendSession(
  db: Db,
  sessionId: string,
  input: z.input<typeof ExtendInput>,
  actorId: string | null,
  bus?: EventBus,
): Promise<{ expiresAt: Date }> {
  const { minutes } = ExtendInput.parse(input);
  return db.$transaction(async (tx) => {
    const session = await tx.labSession.findUnique({ where: { id: sessionId }, select: { state: true, expiresAt: true } });
    if (!session || session.state === "ended") throw new CohortRuleError("sessionNotLive", 409, "the session is not live");
    if (!session.expiresAt) throw new CohortRuleError("sessionHasNoLimit", 409, "the session has no time limit");
    const expiresAt = new Date(session.expiresAt.getTime() + minutes * 60_000);
    // Conditional on the value read: two concurrent extensions both count.
    const updated = await tx.labSession.updateMany({ where: { id: sessionId, expiresAt: session.expiresAt }, data: { expiresAt } });
    if (updated.count !== 1) throw new Error("the session changed meanwhile; try again");
    await recordAudit(tx, {
      actorId,
      action: "session.extend",
      targetType: "session",
      targetId: sessionId,
      detail: { minutes, expiresAt: expiresAt.toISOString() },
    });
    bus?.publishSessionChange(sessionId);
    return { expiresAt };
  });
}

/** A learner's cohort for a lab: its limits, and an exam's window and sittings. */
export interface CohortLimits {
  cohortId: string;
  sessionMinutes: number | null;
  idleMinutes: number | null;
  startsAt: Date | null;
  endsAt: Date | null;
  examAttempts: number;
  examMinutes: number | null;
}

/**
 * The cohort a learner's new session of `labSlug` runs under, with its limits: the newest live
 * cohort (not ended) they learn in that has the lab. Null when none applies (platform defaults).
 * The session keeps the cohort's id and reads its limits from the cohort (startOrResumeSession).
 */
export async function cohortLimitsFor(db: Db, learnerId: string, labSlug: string): Promise<CohortLimits | null> {
  const cohort = await db.cohort.findFirst({
    where: { endedAt: null, labs: { has: labSlug }, members: { some: { userId: learnerId, role: "learner" } } },
    orderBy: { createdAt: "desc" },
    select: { id: true, sessionMinutes: true, idleMinutes: true, startsAt: true, endsAt: true, examAttempts: true, examMinutes: true },
  });
  if (!cohort) return null;
  const { id, ...limits } = cohort;
  return { cohortId: id, ...limits };
}
