/**
 * GET /api/sessions/:id/events — Server-Sent Events: `progress` with the full Progress whenever it
 * changes, first once on connect; `watchers` with the names of who watches its terminals read-only
 * (on connect and on every change), so the learner sees they are being watched. For the
 * session's owner and its watchers. A comment line every KEEPALIVE_MS keeps proxies from closing it.
 * When the caller's access ends while it is open (signed out, removed, cohort ended): `revoked`
 * with the reason, then the stream ends.
 */
import { requireSession, requireUser } from "@/server/auth/guard";
import type { Progress } from "@/server/grader/progress";
import { apiError, apiRoute } from "@/server/http/route";
import { revokeOnAccessChange, streamSlot } from "@/server/http/streams";

export const dynamic = "force-dynamic";

/** Interval of the keep-alive comment, in ms. */
const KEEPALIVE_MS = 15_000;

export const GET = apiRoute<{ params: Promise<{ id: string }> }>(async (request, context, services) => {
  const user = await requireUser(services.auth, request.headers);
  const { id } = await context.params;
  await requireSession(services.db, user, id, "watch");
  const release = streamSlot(request, user.id);
  if (!release) return apiError(request, 429, "tooManyStreams");

  const encoder = new TextEncoder();
  let cleanup = () => {};
  const stream = new ReadableStream<Uint8Array>({
    async start(controller) {
      const send = (progress: Progress) => {
        try {
          controller.enqueue(encoder.encode(`event: progress\ndata: ${JSON.stringify(progress)}\n\n`));
        } catch {
          cleanup(); // the stream is closed
        }
      };
      const sendWatchers = (names: readonly string[]) => {
        try {
          controller.enqueue(encoder.encode(`event: watchers\ndata: ${JSON.stringify({ watchers: names })}\n\n`));
        } catch {
          cleanup();
        }
      };
      const unsubscribeProgress = services.bus.onProgress(id, send);
      const unsubscribeWatchers = services.bus.onWatchers(id, sendWatchers);
      // Signed out, removed from the cohort, the cohort ended: the stream ends with the reason.
      const unsubscribeAccess = revokeOnAccessChange(
        services.bus,
        user.id,
        async () => requireSession(services.db, await requireUser(services.auth, request.headers), id, "watch"),
        (reason) => {
          try {
            controller.enqueue(encoder.encode(`event: revoked\ndata: ${JSON.stringify({ reason })}\n\n`));
            controller.close();
          } catch {
            // already closed
          }
          cleanup();
          release();
        },
      );
      const unsubscribe = () => {
        unsubscribeProgress();
        unsubscribeWatchers();
        unsubscribeAccess();
      };
      const keepalive = setInterval(() => {
        try {
          controller.enqueue(encoder.encode(": keepalive\n\n"));
        } catch {
          cleanup();
        }
      }, KEEPALIVE_MS);
      cleanup = () => {
        unsubscribe();
        clearInterval(keepalive);
      };
      request.signal.addEventListener("abort", () => {
        cleanup();
        try {
          controller.close();
        } catch {
          // already closed
        }
      });
      send(await services.grader.progress(id));
      sendWatchers(await services.watchers.watchers(id));
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
