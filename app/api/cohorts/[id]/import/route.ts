/**
 * POST imports people from a CSV file (the request body, text/csv; `email,name[,role]`): existing
 * accounts become members, the others get invitations bound to the cohort; answers the report
 * (invited rows with their links, added, already members, problems per line). A body over the size limit is refused before it is read whole. Admins.
 */
import { requireRole } from "@/server/auth/guard";
import { invitationLinks } from "@/server/auth/invitations";
import { cohortRoute } from "@/server/cohorts/access";
import { CSV_MAX_BYTES, importCohortCsv } from "@/server/cohorts/csv-import";
import { publicUrl } from "@/server/config";

export const dynamic = "force-dynamic";

export const POST = cohortRoute<{ params: Promise<{ id: string }> }>(async (request, context, services) => {
  const admin = await requireRole(services.auth, request.headers, "admin");
  const { id } = await context.params;
  const bytes = await readLimited(request, CSV_MAX_BYTES + 1);
  const report = await importCohortCsv(services.db, id, bytes, admin.id, invitationLinks(services.secret, publicUrl(services.env)));
  return Response.json(report, { status: report.invited.length + report.added.length > 0 ? 201 : 200 });
});

/** The body's first `limit` bytes at most (enough to tell the domain it is too large), never more in memory. */
async function readLimited(request: Request, limit: number): Promise<Uint8Array> {
  if (!request.body) return new Uint8Array();
  const reader = request.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    chunks.push(value);
    size += value.byteLength;
    if (size >= limit) {
      await reader.cancel().catch(() => undefined);
      break;
    }
  }
  return Buffer.concat(chunks);
}
