/**
 * Invitations (admin only): GET lists them, POST makes one for an email address and role and
 * returns its link once (`/invite/<token>`; only the token's hash is stored).
 */
import { requireRole } from "@/server/auth/guard";
import { publicUrl } from "@/server/config";
import { createInvitation, listInvitations } from "@/server/auth/invitations";
import { apiRoute, jsonBody } from "@/server/http/route";

export const dynamic = "force-dynamic";

export const GET = apiRoute<unknown>(async (request, _context, services) => {
  await requireRole(services.auth, request.headers, "admin");
  return Response.json({ invitations: await listInvitations(services.db) });
});

export const POST = apiRoute<unknown>(async (request, _context, services) => {
  const admin = await requireRole(services.auth, request.headers, "admin");
  const { invitation, token } = await createInvitation(services.db, (await jsonBody(request)) as never, admin.id);
  return Response.json({ invitation, url: `${publicUrl(services.env)}/invite/${token}` }, { status: 201 });
});

