/**
 * Invitations: the only way to make an account besides the first admin. An admin makes a link
 * for one email address with a role (and, for the cohort work, optionally a cohort); the link's
 * token is shown once and stored only as its SHA-256. Accepting claims the invitation atomically
 * (usedAt), creates the user with the invitation's role and adds them to its cohort.
 */
import { createHash, randomBytes } from "node:crypto";
import { z } from "zod";
import type { Db } from "../db/client";
import { ROLES, type Auth, type Role } from "./auth";
import { createUserWithPassword, DisplayName, Email, Password, type UserView } from "./users";

/** How long an invitation link works unless the admin says otherwise: 14 days, in ms. */
export const INVITATION_TTL_MS = 14 * 24 * 60 * 60 * 1000;
/** Random bytes in an invitation token (43 base64url characters). */
const INVITATION_TOKEN_BYTES = 32;

export const InvitationToken = z.string().regex(/^[A-Za-z0-9_-]{43}$/);

export const NewInvitation = z.object({
  email: Email,
  role: z.enum(ROLES),
  cohortId: z.string().min(1).max(64).optional(),
  /** Lifetime in days. */
  days: z.coerce.number().int().min(1).max(90).optional(),
});
export type NewInvitation = z.input<typeof NewInvitation>;

export const AcceptInvitation = z.object({
  token: InvitationToken,
  name: DisplayName,
  password: Password,
});

export interface InvitationView {
  id: string;
  email: string;
  role: Role;
  cohortId: string | null;
  expiresAt: Date;
  usedAt: Date | null;
  createdAt: Date;
}

/** The link does not exist, was used, or has expired (one error for all three: no probing). */
export class InvitationInvalidError extends Error {
  constructor() {
    super("this invitation link is not valid (used, expired or unknown)");
  }
}

export function hashInvitationToken(token: string): string {
  return createHash("sha256").update(token).digest("hex");
}

/** Makes an invitation; returns it with the token for the link (`/invite/<token>`), shown once. */
export async function createInvitation(
  db: Db,
  input: NewInvitation,
  createdById: string | null,
  now = new Date(),
): Promise<{ invitation: InvitationView; token: string }> {
  const data = NewInvitation.parse(input);
  const token = randomBytes(INVITATION_TOKEN_BYTES).toString("base64url");
  const ttl = data.days ? data.days * 24 * 60 * 60 * 1000 : INVITATION_TTL_MS;
  const invitation = await db.invitation.create({
    data: {
      email: data.email,
      role: data.role,
      cohortId: data.cohortId ?? null,
      tokenHash: hashInvitationToken(token),
      expiresAt: new Date(now.getTime() + ttl),
      createdById,
    },
    select: INVITATION_VIEW,
  });
  return { invitation, token };
}

export function listInvitations(db: Db): Promise<InvitationView[]> {
  return db.invitation.findMany({ orderBy: { createdAt: "desc" }, take: 200, select: INVITATION_VIEW });
}

/** The open invitation a token names, or null (unknown, used or expired). */
export async function findOpenInvitation(db: Db, token: string, now = new Date()): Promise<InvitationView | null> {
  if (!InvitationToken.safeParse(token).success) return null;
  return db.invitation.findFirst({
    where: { tokenHash: hashInvitationToken(token), usedAt: null, expiresAt: { gt: now } },
    select: INVITATION_VIEW,
  });
}

/**
 * Accepts an invitation: the account gets the invitation's email and role, never one the
 * caller chose. Throws InvitationInvalidError, EmailTakenError (the invitation stays open) or a
 * ZodError for bad input.
 */
export async function acceptInvitation(
  db: Db,
  auth: Auth,
  input: z.input<typeof AcceptInvitation>,
  now = new Date(),
): Promise<UserView> {
  const data = AcceptInvitation.parse(input);
  const tokenHash = hashInvitationToken(data.token);
  // Claim first (one UPDATE): two concurrent accepts of one link cannot both make an account.
  const claimed = await db.invitation.updateMany({
    where: { tokenHash, usedAt: null, expiresAt: { gt: now } },
    data: { usedAt: now },
  });
  if (claimed.count !== 1) throw new InvitationInvalidError();
  const invitation = await db.invitation.findUniqueOrThrow({ where: { tokenHash } });
  let user: UserView;
  try {
    user = await createUserWithPassword(db, auth, {
      email: invitation.email,
      name: data.name,
      role: invitation.role,
      password: data.password,
    });
  } catch (error) {
    // No account was made: the link stays usable.
    await db.invitation.update({ where: { tokenHash }, data: { usedAt: null } }).catch(() => undefined);
    throw error;
  }
  if (invitation.cohortId && invitation.role !== "admin") {
    await db.cohortMember.upsert({
      where: { cohortId_userId: { cohortId: invitation.cohortId, userId: user.id } },
      create: { cohortId: invitation.cohortId, userId: user.id, role: invitation.role },
      update: {},
    });
  }
  return user;
}

const INVITATION_VIEW = {
  id: true,
  email: true,
  role: true,
  cohortId: true,
  expiresAt: true,
  usedAt: true,
  createdAt: true,
} as const;

/** How long the first admin's sign-in link is valid, in days. */
export const FIRST_ADMIN_LINK_DAYS = 1;

/**
 * On a database without any admin: a one-time link (an admin invitation for `email`, valid
 * FIRST_ADMIN_LINK_DAYS) that sets the first admin's password when opened; links from earlier
 * starts that were never used stop working. Returns null when an admin exists. No password is
 * ever printed or logged; the token is shown once and stored only as its hash.
 */
export async function ensureFirstAdmin(db: Db, email: string, now = new Date()): Promise<{ email: string; token: string; expiresAt: Date } | null> {
  if (await db.user.findFirst({ where: { role: "admin" }, select: { id: true } })) return null;
  await db.invitation.updateMany({ where: { role: "admin", createdById: null, usedAt: null, expiresAt: { gt: now } }, data: { expiresAt: now } });
  const { invitation, token } = await createInvitation(db, { email, role: "admin", days: FIRST_ADMIN_LINK_DAYS }, null, now);
  return { email: invitation.email, token, expiresAt: invitation.expiresAt };
}
