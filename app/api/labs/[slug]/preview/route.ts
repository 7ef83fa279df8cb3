/**
 * GET /api/labs/:slug/preview?machine=&port=&path= — the web preview of the caller's own live
 * session of a lab (what a lesson's `http://node01:30080/` link opens): 303 to the preview origin
 * with a short-lived entry code; 404 when the caller has no ready session of the lab.
 */
import { requireUser } from "@/server/auth/guard";
import { Denied } from "@/server/denied";
import { apiRoute } from "@/server/compose/route";
import { previewEntryUrl, previewQuery, signInId } from "@/server/preview/entry";
import { previewBaseOf } from "@/server/compose/services";

export const dynamic = "force-dynamic";

export const GET = apiRoute<{ params: Promise<{ slug: string }> }>(async (request, context, services) => {
  const user = await requireUser(services.auth, request.headers);
  const { slug } = await context.params;
  const query = previewQuery(new URL(request.url));
  const session = await services.db.labSession.findFirst({ where: { learnerId: user.id, labSlug: slug, state: "ready" }, select: { id: true } });
  if (!session) throw new Denied(404, "noSuchSession");
  const signIn = await signInId(services.auth, request.headers);
  const location = await previewEntryUrl({ db: services.db, secret: services.secret, base: previewBaseOf(services) }, { user, signIn, access: "owner" }, session.id, query);
  return new Response(null, { status: 303, headers: { location, "cache-control": "no-store", "referrer-policy": "no-referrer" } });
});
