/**
 * POST adds a person to the cohort by email (admins): an existing account becomes a member at
 * once with the role given (201 `added`, 200 `alreadyMember`); an unknown email gets an
 * invitation bound to the cohort (201 `invited`, with its link).
 */
import { requireRole } from "@/server/auth/guard";
import { invitationLinks } from "@/server/auth/invitations";
import { cohortRoute } from "@/server/compose/route";
import { addMemberByEmail } from "@/server/cohorts/members";
import { publicUrl } from "@/server/config";
import { jsonBody } from "@/server/http/route";

export const dynamic = "force-dynamic";

export const POST = cohortRoute<{ params: Promise<{ id: string }> }>(async (request, context, services) => {
  const admin = await requireRole(services.auth, request.headers, "admin");
  const { id } = await context.params;
  const links = invitationLinks(services.secret, publicUrl(services.env));
  const result = await addMemberByEmail(services.db, links, id, (await jsonBody(request)) as never, admin.id);
  return Response.json(result, { status: result.outcome === "alreadyMember" ? 200 : 201 });
});
