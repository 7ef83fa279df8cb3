/**
 * Invitations (admin only): GET lists them (open ones with their link, kept sealed), POST makes
 * one for an email address and role and returns its link (`/invite/<token>`).
 */
import { requireRole } from "@/server/auth/guard";
import { publicUrl } from "@/server/config";
import { createInvitation, invitationLinks, listInvitations } from "@/server/auth/invitations";
import { jsonBody } from "@/server/http/route";
import { apiRoute } from "@/server/compose/route";

export const dynamic = "force-dynamic";

export const GET = apiRoute<unknown>(async (request, _context, services) => {
  await requireRole(services.auth, request.headers, "admin");
  return Response.json({ invitations: await listInvitations(services.db, invitationLinks(services.secret, publicUrl(services.env))) });
});

export const POST = apiRoute<unknown>(async (request, _context, services) => {
  const admin = await requireRole(services.auth, request.headers, "admin");
  const links = invitationLinks(services.secret, publicUrl(services.env));
  const { invitation, token } = await createInvitation(services.db, (await jsonBody(request)) as never, admin.id, { secret: links.secret });
  return Response.json({ invitation, url: links.linkFor(token) }, { status: 201 });
});
