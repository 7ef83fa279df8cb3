/**
 * GET /api/sessions/:id/events — Server-Sent Events: `progress` with the full Progress whenever it
 * changes, first once on connect; `watchers` with the names of who watches its terminals read-only
 * (on connect and on every change), so the learner sees they are being watched; `tabs` with the
 * learner's open extra shells (on connect and on every change: the watch view shows them). For the
 * session's owner and its watchers (server/http/streams.ts eventStream: keep-alive, slot release).
 * When the caller's access ends while it is open (signed out, removed, cohort ended): `revoked`
 * with the reason, then the stream ends.
 */
import { requireSession, requireUser } from "@/server/auth/guard";
import type { Progress } from "@/server/grader/progress";
import { apiError } from "@/server/http/route";
import { apiRoute } from "@/server/compose/route";
import { eventStream, revokeOnAccessChange, streamSlot } from "@/server/http/streams";
import { openTabs } from "@/server/sessions/tabs";

export const dynamic = "force-dynamic";

export const GET = apiRoute<{ params: Promise<{ id: string }> }>(async (request, context, services) => {
  const user = await requireUser(services.auth, request.headers);
  const { id } = await context.params;
  await requireSession(services.db, user, id, "watch");
  const release = streamSlot(request, user.id);
  if (!release) return apiError(request, 429, "tooManyStreams");

  return eventStream(request, release, async (out) => {
    out.onClose(services.bus.onProgress(id, (progress: Progress) => out.send("progress", progress)));
    out.onClose(services.bus.onWatchers(id, (names) => out.send("watchers", { watchers: names })));
    out.onClose(services.bus.onTabs(id, (tabs) => out.send("tabs", { tabs })));
    // Signed out, removed from the cohort, the cohort ended: the stream ends with the reason.
    out.onClose(
      revokeOnAccessChange(
        services.bus,
        user.id,
        async () => requireSession(services.db, await requireUser(services.auth, request.headers), id, "watch"),
        out.revoke,
      ),
    );
    out.send("progress", await services.grader.progress(id));
    out.send("watchers", { watchers: await services.watchers.watchers(id) });
    out.send("tabs", { tabs: await openTabs(services.db, id) });
  });
});
