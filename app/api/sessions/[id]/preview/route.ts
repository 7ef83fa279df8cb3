/**
 * GET /api/sessions/:id/preview?machine=&port=&path= — opens `http://<machine>:<port><path>` of a
 * lab session through the web preview (server/preview/): 303 to the preview origin with a
 * short-lived entry code. The owner, and watchers (read-only: GET and HEAD only). 404 for anyone else.
 */
import { requireSession, requireUser } from "@/server/auth/guard";
import { apiRoute } from "@/server/compose/route";
import { previewEntryUrl, previewQuery, signInId } from "@/server/preview/entry";
import { previewBaseOf } from "@/server/compose/services";

export const dynamic = "force-dynamic";

export const GET = apiRoute<{ params: Promise<{ id: string }> }>(async (request, context, services) => {
  const user = await requireUser(services.auth, request.headers);
  const { id } = await context.params;
  const session = await requireSession(services.db, user, id, "watch");
  const query = previewQuery(new URL(request.url));
  const signIn = await signInId(services.auth, request.headers);
  const location = await previewEntryUrl(
    { db: services.db, secret: services.secret, base: previewBaseOf(services) },
    { user, signIn, access: session.access },
    id,
    query,
  );
  return new Response(null, { status: 303, headers: { location, "cache-control": "no-store", "referrer-policy": "no-referrer" } });
});
