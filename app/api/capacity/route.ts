/** GET the capacity view: live sessions, machines, provider and warm pool, host memory. Admins. */
import { requireRole } from "@/server/auth/guard";
import { capacitySnapshot } from "@/server/cohorts/capacity";
import { apiRoute } from "@/server/compose/route";

export const dynamic = "force-dynamic";

export const GET = apiRoute<unknown>(async (request, _context, services) => {
  await requireRole(services.auth, request.headers, "admin");
  return Response.json(await capacitySnapshot(services.db, services.provider, { labsDir: services.labs.labsDir }));
});
