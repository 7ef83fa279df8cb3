/**
 * POST imports people from a CSV file (the request body, text/csv; `email,name[,role]`): existing
 * accounts become members, the others get invitations bound to the cohort; answers the report
 * (invited rows with their links, added, already members, problems per line). A body over the size limit is refused before it is read whole. Admins.
 */
import { requireRole } from "@/server/auth/guard";
import { invitationLinks } from "@/server/auth/invitations";
import { cohortRoute } from "@/server/compose/route";
import { CSV_MAX_BYTES, importCohortCsv } from "@/server/cohorts/csv-import";
import { publicUrl } from "@/server/config";
import { readBodyBytes } from "@/server/http/route";

export const dynamic = "force-dynamic";

export const POST = cohortRoute<{ params: Promise<{ id: string }> }>(async (request, context, services) => {
  const admin = await requireRole(services.auth, request.headers, "admin");
  const { id } = await context.params;
  const bytes = await readBodyBytes(request, CSV_MAX_BYTES + 1);
  const report = await importCohortCsv(services.db, id, bytes, admin.id, invitationLinks(services.secret, publicUrl(services.env)));
  return Response.json(report, { status: report.invited.length + report.added.length > 0 ? 201 : 200 });
});
