/**
 * Graceful drain of the HTTP side on SIGTERM (server.ts): the server's open event streams (SSE,
 * whichever route answers them; Next.js runs route code in its own module graph, so they are
 * found by their response's Content-Type on the Node server) are told to come back soon and
 * ended, so each browser's EventSource reconnects (through a proxy, to another process).
 */
import type http from "node:http";
import type { ServerResponse } from "node:http";

/** What a drained event stream tells EventSource to wait before reconnecting, ms. */
export const DRAIN_RECONNECT_MS = 250;

export interface ResponseTracker {
  /** Ends every open event stream after a `retry:` line; returns how many it ended. */
  endEventStreams(): number;
}

export function trackResponses(server: http.Server): ResponseTracker {
  const open = new Set<ServerResponse>();
  server.on("request", (_req, res: ServerResponse) => {
    open.add(res);
    res.once("close", () => open.delete(res));
  });
  return {
    endEventStreams() {
      let ended = 0;
      for (const res of open) {
        if (res.writableEnded || !String(res.getHeader("content-type") ?? "").startsWith("text/event-stream")) continue;
        // Next.js may still try to write the stream's next chunk before it sees the close: that
        // write-after-end error is expected here and must not become an uncaught one.
        res.on("error", () => undefined);
        // Between two events (each is written whole), so the line is a field of its own.
        res.end(`retry: ${DRAIN_RECONNECT_MS}\n\n`);
        ended++;
      }
      return ended;
    },
  };
}
