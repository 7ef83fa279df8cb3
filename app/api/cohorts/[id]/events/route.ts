/**
 * GET /api/cohorts/:id/events — Server-Sent Events for the instructor dashboard: `changed` (with
 * the session id) whenever one of the cohort's learners' sessions changes (a check ran, a step was
 * passed, a session started or ended); the page then re-fetches the dashboard. First a `hello`.
 * Admins and the cohort's instructors (until it ends: then 403, and an open stream gets
 * `revoked` with the reason and ends).
 */
import { requireRole } from "@/server/auth/guard";
import { cohortRoute, requireCohortView } from "@/server/cohorts/access";
import { cohortLearnerSessionIds } from "@/server/cohorts/dashboard";
import { apiError } from "@/server/http/route";
import { revokeOnAccessChange, streamSlot } from "@/server/http/streams";

export const dynamic = "force-dynamic";

/** Interval of the keep-alive comment, in ms. */
const KEEPALIVE_MS = 15_000;
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

  const encoder = new TextEncoder();
  let cleanup = () => {};
  const stream = new ReadableStream<Uint8Array>({
    start(controller) {
      const write = (text: string) => {
        try {
          controller.enqueue(encoder.encode(text));
        } catch {
          cleanup();
        }
      };
      const onChange = async (sessionId: string | null) => {
        // Notices were missed (the event connection reconnected): reload the whole dashboard.
        if (sessionId === null) return write(`event: changed\ndata: {}\n\n`);
        if (!sessions.has(sessionId) && Date.now() - refreshedAt > 250) {
          // Possibly a session made after we looked: re-read (rate-limited) before deciding.
          refreshedAt = Date.now();
          sessions = await cohortLearnerSessionIds(services.db, id).catch(() => sessions);
        }
        if (sessions.has(sessionId)) write(`event: changed\ndata: ${JSON.stringify({ sessionId })}\n\n`);
      };
      const unsubscribeChanges = services.bus.onAnySessionChange((sid) => void onChange(sid));
      // Signed out, removed from the cohort, the cohort ended: the stream ends with the reason.
      const unsubscribeAccess = revokeOnAccessChange(
        services.bus,
        user.id,
        async () => requireCohortView(services.db, await requireRole(services.auth, request.headers, "admin", "instructor"), id),
        (reason) => {
          write(`event: revoked\ndata: ${JSON.stringify({ reason })}\n\n`);
          try {
            controller.close();
          } catch {
            // already closed
          }
          cleanup();
          release();
        },
      );
      const unsubscribe = () => {
        unsubscribeChanges();
        unsubscribeAccess();
      };
      const keepalive = setInterval(() => write(": keepalive\n\n"), KEEPALIVE_MS);
      const refresh = setInterval(() => {
        void cohortLearnerSessionIds(services.db, id).then((s) => {
          if (s.size !== sessions.size) write(`event: changed\ndata: {}\n\n`);
          sessions = s;
        }, () => undefined);
      }, MEMBERSHIP_REFRESH_MS);
      cleanup = () => {
        unsubscribe();
        clearInterval(keepalive);
        clearInterval(refresh);
      };
      request.signal.addEventListener("abort", () => {
        cleanup();
        try {
          controller.close();
        } catch {
          // already closed
        }
      });
      write(`event: hello\ndata: {}\n\n`);
    },
    cancel() {
      cleanup();
      release();
    },
  });
  return new Response(stream, {
    headers: { "Content-Type": "text/event-stream; charset=utf-8", "Cache-Control": "no-cache, no-transform", Connection: "keep-alive" },
  });
});
