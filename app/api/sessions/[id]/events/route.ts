/**
 * GET /api/sessions/:id/events — Server-Sent Events: `progress` with the full Progress whenever it
 * changes, first once on connect. A comment line every KEEPALIVE_MS keeps proxies from closing it.
 */
import { ownedSessionOr } from "@/server/http/learner";
import { getServicesOrThrow } from "@/server/services";
import type { Progress } from "@/server/grader/progress";

export const dynamic = "force-dynamic";

/** Interval of the keep-alive comment, in ms. */
const KEEPALIVE_MS = 15_000;

export async function GET(request: Request, context: { params: Promise<{ id: string }> }) {
  const { id } = await context.params;
  const services = getServicesOrThrow();
  const owned = await ownedSessionOr(services, id);
  if (owned.response) return owned.response;

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
      const unsubscribe = services.bus.onProgress(id, send);
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
    },
    cancel() {
      cleanup();
    },
  });
  return new Response(stream, {
    headers: { "Content-Type": "text/event-stream; charset=utf-8", "Cache-Control": "no-cache, no-transform", Connection: "keep-alive" },
  });
}
