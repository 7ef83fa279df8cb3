/**
 * PUT /api/pool-targets/:slug — an admin sets a lab's prepared warm sets and cap
 * ({ reserve, initial, cap }); DELETE removes them. Audited. The pool's holder picks the change
 * up within seconds (server/machines/warm-pool.ts).
 */
import { requireRole } from "@/server/auth/guard";
import { removePoolTarget, setPoolTarget } from "@/server/cohorts/pool-targets";
import { apiError, jsonBody } from "@/server/http/route";
import { apiRoute } from "@/server/compose/route";

export const dynamic = "force-dynamic";

type Ctx = { params: Promise<{ slug: string }> };

export const PUT = apiRoute<Ctx>(async (request, context, services) => {
  const admin = await requireRole(services.auth, request.headers, "admin");
  const { slug } = await context.params;
  const row = await setPoolTarget(services.db, services.labs, slug, await jsonBody(request), admin.id).catch((error: { code?: string }) => {
    if (error.code === "noSuchLab") return null;
    throw error;
  });
  if (!row) return apiError(request, 404, "noSuchLab");
  return Response.json({ target: { labSlug: row.labSlug, reserve: row.reserve, initial: row.initial, cap: row.cap } });
});

export const DELETE = apiRoute<Ctx>(async (request, context, services) => {
  const admin = await requireRole(services.auth, request.headers, "admin");
  const { slug } = await context.params;
  return Response.json({ removed: await removePoolTarget(services.db, slug, admin.id) });
});
