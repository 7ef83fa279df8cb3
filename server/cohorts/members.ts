/**
 * People joining a cohort whether or not they have an account yet: an admin adds someone by email
 * (an existing account becomes a member at once; anyone else gets an invitation link), and an
 * existing account that opens a cohort invitation link joins with it (signed in as the
 * invitation's email, never as someone else). Memberships are written by `putMember`
 * (server/cohorts/cohorts.ts), removals by `removeMember`.
 */
import { z } from "zod";
import {
  createInvitation,
  hashInvitationToken,
  InvitationInvalidError,
  InvitationToken,
  openInvitationWhere,
  type InvitationListItem,
  type InvitationLinks,
} from "../auth/invitations";
import type { CurrentUser } from "../auth/guard";
import { EmailTakenError } from "../auth/users";
import type { Db } from "../db/client";
import { CohortRuleError, getCohortOrThrow, MemberInput, putMember, type MemberView } from "./cohorts";

export type AddByEmailResult =
  { outcome: "added" | "alreadyMember"; member: MemberView } | { outcome: "invited"; invitation: InvitationListItem };

/**
 * Adds `email` to the cohort with `role`: an existing account (of that role) becomes a member at
 * once; an unknown email gets an invitation bound to the cohort (its link in `invitation.url`).
 */
export async function addMemberByEmail(
  db: Db,
  links: InvitationLinks,
  cohortId: string,
  input: z.input<typeof MemberInput> & { days?: number },
  actorId: string | null,
): Promise<AddByEmailResult> {
  const data = MemberInput.extend({ days: z.coerce.number().int().min(1).max(90).optional() }).parse(input);
  const cohort = await getCohortOrThrow(db, cohortId);
  if (cohort.endedAt) throw new CohortRuleError("cohortEnded", 409, "the cohort has ended");
  const user = await db.user.findUnique({ where: { email: data.email }, select: { id: true, email: true, name: true, role: true } });
  if (!user) {
    const { invitation, token } = await createInvitation(db, { email: data.email, role: data.role, cohortId, days: data.days }, actorId, {
      secret: links.secret,
    });
    return { outcome: "invited", invitation: { ...invitation, open: true, url: links.linkFor(token) } };
  }
  if (user.role !== data.role) throw new CohortRuleError("wrongUserRole", 422, `${data.email} is a ${user.role}, not a ${data.role}`);
  const member = await db.$transaction((tx) => putMember(tx, cohortId, user, data.role, actorId, "admin"));
  return {
    outcome: member.alreadyMember ? "alreadyMember" : "added",
    member: { userId: user.id, email: user.email, name: user.name, role: member.role, addedAt: member.addedAt },
  };
}

/** The signed-in user is not the one the invitation is for (403: they must sign in as that email). */
export class InvitationForAnotherAccountError extends Error {
  readonly code = "invitationOtherAccount";
  constructor() {
    super("this invitation is for another account");
  }
}

/**
 * An existing account joins the cohort of an invitation link: `user` must be signed in as the
 * invitation's email (else InvitationForAnotherAccountError, and the invitation stays open), have
 * its role, and the cohort must be live. Claims the invitation (used once) and writes the
 * membership in one transaction. An invitation without a cohort gives an existing account
 * nothing to join: EmailTakenError, as when making the account.
 */
export async function joinWithInvitation(
  db: Db,
  user: Pick<CurrentUser, "id" | "email" | "role">,
  token: string,
  now = new Date(),
): Promise<{ cohortId: string; role: "learner" | "instructor"; alreadyMember: boolean }> {
  if (!InvitationToken.safeParse(token).success) throw new InvitationInvalidError();
  const tokenHash = hashInvitationToken(token);
  const invitation = await db.invitation.findFirst({ where: { tokenHash, ...openInvitationWhere(now) } });
  if (!invitation) throw new InvitationInvalidError();
  if (invitation.email !== user.email.toLowerCase()) throw new InvitationForAnotherAccountError();
  const { cohortId, role } = invitation;
  if (!cohortId || role === "admin") throw new EmailTakenError(invitation.email);
  if (user.role !== role) throw new CohortRuleError("wrongUserRole", 422, `${user.email} is a ${user.role}, not a ${role}`);
  const cohort = await getCohortOrThrow(db, cohortId);
  if (cohort.endedAt) throw new CohortRuleError("cohortEnded", 409, "the cohort has ended");
  return db.$transaction(async (tx) => {
    // Claim first, conditionally (still open, still this email): a link works once.
    const claimed = await tx.invitation.updateMany({
      where: { id: invitation.id, email: invitation.email, ...openInvitationWhere(now) },
      data: { usedAt: now },
    });
    if (claimed.count !== 1) throw new InvitationInvalidError();
    const member = await putMember(tx, cohortId, user, role, user.id, "invitation", now);
    return { cohortId, role, alreadyMember: member.alreadyMember };
  });
}
