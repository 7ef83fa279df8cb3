/**
 * POST /api/invitations/join — { token }: the signed-in account joins the cohort of an invitation
 * made for its own email (the invitation is then used). Another account's invitation is refused
 * (403) and stays open.
 */
import { z } from "zod";
import { requireUser } from "@/server/auth/guard";
import { InvitationInvalidError } from "@/server/auth/invitations";
import { EmailTakenError } from "@/server/auth/users";
import { cohortRoute } from "@/server/compose/route";
import { InvitationForAnotherAccountError, joinWithInvitation } from "@/server/cohorts/members";
import { apiError, jsonBody } from "@/server/http/route";

export const dynamic = "force-dynamic";

const Body = z.object({ token: z.string().max(100) });

export const POST = cohortRoute<unknown>(async (request, _context, services) => {
  const user = await requireUser(services.auth, request.headers);
  const { token } = Body.parse(await jsonBody(request));
  try {
    return Response.json(await joinWithInvitation(services.db, user, token), { status: 201 });
  } catch (error) {
    if (error instanceof InvitationInvalidError) return apiError(request, 410, "invitationInvalid");
    if (error instanceof InvitationForAnotherAccountError) return apiError(request, 403, error.code);
    if (error instanceof EmailTakenError) return apiError(request, 409, "emailTaken");
    throw error;
  }
});
