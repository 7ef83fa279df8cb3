/**
 * GET /api/cohorts/:id/events — Server-Sent Events for the instructor dashboard: `changed` (with
 * the session id) whenever one of the cohort's learners' sessions changes (a check ran, a step was
 * passed, a session started or ended); the page then re-fetches the dashboard. First a `hello`.
 * Admins and the cohort's instructors (until it ends: then 403, and an open stream gets
 * `revoked` with the reason and ends).
 */
import { requireRole } from "@/server/auth/guard";
import { requireCohortView } from "@/server/cohorts/access";
import { cohortRoute } from "@/server/compose/route";
import { cohortLearnerSessionIds } from "@/server/cohorts/dashboard";
import { apiError } from "@/server/http/route";
import { eventStream, revokeOnAccessChange, streamSlot } from "@/server/http/streams";

export const dynamic = "force-dynamic";

/** How often the set of the cohort's sessions is re-read (new sessions, new learners), in ms. */
const MEMBERSHIP_REFRESH_MS = 5_000;

export const GET = cohortRoute<{ params: Promise<{ id: string }> }>(async (request, context, services) => {
  const user = await requireRole(services.auth, request.headers, "admin", "instructor");
  const { id } = await context.params;
  await requireCohortView(services.db, user, id);
  const release = streamSlot(request, user.id);
  if (!release) return apiError(request, 429, "tooManyStreams");
  let sessions = await cohortLearnerSessionIds(services.db, id);
  let refreshedAt = Date.now();

  return eventStream(request, release, (out) => {
    const onChange = async (sessionId: string | null) => {
      // Notices were missed (the event connection reconnected): reload the whole dashboard.
      if (sessionId === null) return out.send("changed", {});
      if (!sessions.has(sessionId) && Date.now() - refreshedAt > 250) {
        // Possibly a session made after we looked: re-read (rate-limited) before deciding.
        refreshedAt = Date.now();
        sessions = await cohortLearnerSessionIds(services.db, id).catch(() => sessions);
      }
      if (sessions.has(sessionId)) out.send("changed", { sessionId });
    };
    out.onClose(services.bus.onAnySessionChange((sid) => void onChange(sid)));
    // Signed out, removed from the cohort, the cohort ended: the stream ends with the reason.
    out.onClose(
      revokeOnAccessChange(
        services.bus,
        user.id,
        async () => requireCohortView(services.db, await requireRole(services.auth, request.headers, "admin", "instructor"), id),
        out.revoke,
      ),
    );
    const refresh = setInterval(() => {
      void cohortLearnerSessionIds(services.db, id).then(
        (s) => {
          if (s.size !== sessions.size) out.send("changed", {});
          sessions = s;
        },
        () => undefined,
      );
    }, MEMBERSHIP_REFRESH_MS);
    out.onClose(() => clearInterval(refresh));
    out.send("hello", {});
  });
});
