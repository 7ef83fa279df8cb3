/** DELETE revokes an open invitation: its link stops working at once (admins); 404 when it is not open. */
import { requireRole } from "@/server/auth/guard";
import { revokeInvitation } from "@/server/auth/invitations";
import { apiError } from "@/server/http/route";
import { apiRoute } from "@/server/compose/route";

export const dynamic = "force-dynamic";

export const DELETE = apiRoute<{ params: Promise<{ id: string }> }>(async (request, context, services) => {
  const admin = await requireRole(services.auth, request.headers, "admin");
  const { id } = await context.params;
  if (!(await revokeInvitation(services.db, id, admin.id))) return apiError(request, 404, "noSuchInvitation");
  return Response.json({ revoked: id });
});
