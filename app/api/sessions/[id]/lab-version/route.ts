/**
 * POST /api/sessions/:id/lab-version — moves a live lab session to its lab's current version
 * (server/sessions/lab-versions.ts): passed steps that still exist stay passed, the current step
 * becomes the new version's first step not passed. Admins only; audited. No body.
 */
import { requireRole } from "@/server/auth/guard";
import { apiError } from "@/server/http/route";
import { apiRoute } from "@/server/compose/route";
import { moveSessionToCurrentVersion, VersionMoveError } from "@/server/sessions/lab-versions";

export const dynamic = "force-dynamic";

export const POST = apiRoute<{ params: Promise<{ id: string }> }>(async (request, context, services) => {
  const admin = await requireRole(services.auth, request.headers, "admin");
  const { id } = await context.params;
  try {
    const move = await moveSessionToCurrentVersion(services.db, services.labs, id, admin.id);
    if (move.moved) {
      await services.bus.publishProgress(id);
      await services.bus.publishSessionChange(id);
    }
    return Response.json(move);
  } catch (error) {
    if (error instanceof VersionMoveError) return apiError(request, error.status, error.code);
    throw error;
  }
});
