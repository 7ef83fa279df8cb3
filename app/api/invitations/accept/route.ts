/**
 * POST /api/invitations/accept — { token, name, password }: make the invited account (the
 * invitation's email and role) and sign it in (better-auth's session cookie). Public.
 */
import { InvitationInvalidError, acceptInvitation } from "@/server/auth/invitations";
import { EmailTakenError } from "@/server/auth/users";
import { apiError, jsonBody } from "@/server/http/route";
import { apiRoute } from "@/server/compose/route";

export const dynamic = "force-dynamic";

export const POST = apiRoute<unknown>(async (request, _context, services) => {
  const body = (await jsonBody(request)) as { password?: unknown };
  let user;
  try {
    user = await acceptInvitation(services.db, services.auth, body as never);
  } catch (error) {
    if (error instanceof InvitationInvalidError) return apiError(request, 410, "invitationInvalid");
    if (error instanceof EmailTakenError) return apiError(request, 409, "emailTaken");
    throw error;
  }
  const signedIn = await services.auth.api.signInEmail({
    body: { email: user.email, password: String(body.password) },
    headers: request.headers,
    asResponse: true,
  });
  const response = Response.json({ user }, { status: 201 });
  for (const cookie of signedIn.headers.getSetCookie()) response.headers.append("set-cookie", cookie);
  return response;
});
