/**
 * Invitations: the only way to make an account besides the first admin. An admin makes a link
 * for one email address with a role (and, for the cohort work, optionally a cohort). The token is
 * looked up by its SHA-256 and kept only sealed with a key derived from the platform secret
 * (`sealSecret`, AES-256-GCM), so an admin can list an open invitation's link again; it is never
 * stored in plain text. Accepting claims the invitation atomically (usedAt), creates the user with
 * the invitation's role and adds them to its cohort. An invitation stops working when used,
 * expired or revoked. (An existing account joins a cohort by its link: server/cohorts/members.ts.)
 */
import { createHash, randomBytes } from "node:crypto";
import { z } from "zod";
import { recordAudit } from "../audit";
import type { Db } from "../db/client";
import { openSecret, sealSecret } from "../secret";
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
  revokedAt: Date | null;
  createdAt: Date;
}

/** An invitation in a list, with its link when it is open and its token was kept (sealed). */
export interface InvitationListItem extends InvitationView {
  open: boolean;
  url: string | null;
}

/** How links are made and their tokens sealed: the platform secret and the public base of `/invite/<token>`. */
export interface InvitationLinks {
  secret: Buffer;
  linkFor(token: string): string;
}

/** The `InvitationLinks` of a server whose public URL is `baseUrl`. */
export function invitationLinks(secret: Buffer, baseUrl: string): InvitationLinks {
  return { secret, linkFor: (token) => `${baseUrl}/invite/${token}` };
}

/** Purpose of the key that seals invitation tokens (HKDF info; see server/secret.ts). */
const TOKEN_SEAL_PURPOSE = "invitation-token";

/** The link does not exist, was used, revoked, or has expired (one error for all: no probing). */
export class InvitationInvalidError extends Error {
  constructor() {
    super("this invitation link is not valid (used, expired or unknown)");
  }
}

/** The where-clause of an invitation that still works at `now`. */
export function openInvitationWhere(now: Date) {
  return { usedAt: null, revokedAt: null, expiresAt: { gt: now } };
}

/** A fresh token and what the database keeps of it (hash to look it up, sealed to show it again). */
export function newInvitationToken(secret: Buffer | undefined): { token: string; tokenHash: string; tokenSealed: string | null } {
  const token = randomBytes(INVITATION_TOKEN_BYTES).toString("base64url");
  return { token, tokenHash: hashInvitationToken(token), tokenSealed: secret ? sealSecret(secret, TOKEN_SEAL_PURPOSE, token) : null };
}

export function hashInvitationToken(token: string): string {
  return createHash("sha256").update(token).digest("hex");
}

/**
 * Makes an invitation; returns it with the token for the link (`/invite/<token>`). With `secret`
 * the token is also kept sealed, so the link can be listed again while the invitation is open.
 */
export async function createInvitation(
  db: Pick<Db, "invitation">,
  input: NewInvitation,
  createdById: string | null,
  { secret, now = new Date() }: { secret?: Buffer; now?: Date } = {},
): Promise<{ invitation: InvitationView; token: string }> {
  const data = NewInvitation.parse(input);
  const { token, tokenHash, tokenSealed } = newInvitationToken(secret);
  const ttl = data.days ? data.days * 24 * 60 * 60 * 1000 : INVITATION_TTL_MS;
  const invitation = await db.invitation.create({
    data: {
      email: data.email,
      role: data.role,
      cohortId: data.cohortId ?? null,
      tokenHash,
      tokenSealed,
      expiresAt: new Date(now.getTime() + ttl),
      createdById,
    },
    select: INVITATION_VIEW,
  });
  return { invitation, token };
}

/** Most invitations one list shows (newest first). */
const LIST_LIMIT = 200;

/**
 * Invitations, newest first: every one (the admin's history), or only the open ones, or only a
 * cohort's. Open ones carry their link when the token was kept sealed with this secret.
 */
export async function listInvitations(
  db: Db,
  links: InvitationLinks,
  filter: { cohortId?: string; openOnly?: boolean } = {},
  now = new Date(),
): Promise<InvitationListItem[]> {
  const rows = await db.invitation.findMany({
    where: { ...(filter.cohortId ? { cohortId: filter.cohortId } : {}), ...(filter.openOnly ? openInvitationWhere(now) : {}) },
    orderBy: { createdAt: "desc" },
    take: LIST_LIMIT,
    select: { ...INVITATION_VIEW, tokenSealed: true },
  });
  return rows.map(({ tokenSealed, ...i }) => {
    const open = !i.usedAt && !i.revokedAt && i.expiresAt > now;
    const token = open && tokenSealed ? openSecret(links.secret, TOKEN_SEAL_PURPOSE, tokenSealed) : null;
    return { ...i, open, url: token ? links.linkFor(token) : null };
  });
}

/**
 * Revokes an open invitation: its link stops working at once. False when there is no such open
 * invitation (unknown, used, expired or already revoked). Audited on its cohort, or on itself.
 */
export async function revokeInvitation(db: Db, id: string, actorId: string | null, now = new Date()): Promise<boolean> {
  // Bounded and without NUL (PostgreSQL text refuses it): anything else is simply not an open invitation.
  if (
    !z
      .string()
      .min(1)
      .max(64)
      .regex(/^[^\u0000]+$/)
      .safeParse(id).success
  )
    return false;
  return db.$transaction(async (tx) => {
    const revoked = await tx.invitation.updateMany({ where: { id, ...openInvitationWhere(now) }, data: { revokedAt: now } });
    if (revoked.count !== 1) return false;
    const invitation = await tx.invitation.findUniqueOrThrow({ where: { id }, select: { email: true, cohortId: true } });
    await recordAudit(tx, {
      actorId,
      action: "invitation.revoke",
      targetType: invitation.cohortId ? "cohort" : "invitation",
      targetId: invitation.cohortId ?? id,
      detail: { invitationId: id, email: invitation.email },
    });
    return true;
  });
}

/** The open invitation a token names, or null (unknown, used, revoked or expired). */
export async function findOpenInvitation(db: Db, token: string, now = new Date()): Promise<InvitationView | null> {
  if (!InvitationToken.safeParse(token).success) return null;
  return db.invitation.findFirst({
    where: { tokenHash: hashInvitationToken(token), ...openInvitationWhere(now) },
    select: INVITATION_VIEW,
  });
}

/**
 * Accepts an invitation: the account gets the invitation's email and role, never one the
 * caller chose. Throws InvitationInvalidError, EmailTakenError (the invitation stays open) or a
 * ZodError for bad input.
 */
export async function acceptInvitation(db: Db, auth: Auth, input: z.input<typeof AcceptInvitation>, now = new Date()): Promise<UserView> {
  const data = AcceptInvitation.parse(input);
  const tokenHash = hashInvitationToken(data.token);
  // Claim first (one UPDATE): two concurrent accepts of one link cannot both make an account.
  const claimed = await db.invitation.updateMany({
    where: { tokenHash, ...openInvitationWhere(now) },
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
  revokedAt: true,
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
export async function ensureFirstAdmin(
  db: Db,
  email: string,
  { secret, now = new Date() }: { secret?: Buffer; now?: Date } = {},
): Promise<{ email: string; token: string; expiresAt: Date } | null> {
  if (await db.user.findFirst({ where: { role: "admin" }, select: { id: true } })) return null;
  await db.invitation.updateMany({
    where: { role: "admin", createdById: null, usedAt: null, expiresAt: { gt: now } },
    data: { expiresAt: now },
  });
  const { invitation, token } = await createInvitation(db, { email, role: "admin", days: FIRST_ADMIN_LINK_DAYS }, null, { secret, now });
  return { email: invitation.email, token, expiresAt: invitation.expiresAt };
}
