/**
 * trackResponses on a real Node HTTP server: an open event stream (headers set the way Next.js
 * sets them, appendHeader) is ended with a `retry:` line, so EventSource reconnects soon; other
 * responses in flight are left to finish.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, expect, it, vi } from "vitest";
import { DRAIN_RECONNECT_MS, trackResponses, type ResponseTracker } from "./drain";

let server: http.Server;
let tracker: ResponseTracker;
let base: string;
let slow: http.ServerResponse | null = null;

beforeAll(async () => {
  server = http.createServer((req, res) => {
    if (req.url === "/events") {
      res.appendHeader("content-type", "text/event-stream; charset=utf-8");
      res.write("event: hello\ndata: {}\n\n");
    } else {
      res.appendHeader("content-type", "application/json");
      slow = res; // answered by the test later
    }
  });
  tracker = trackResponses(server);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
});

it("ends open event streams with a retry line and leaves other responses alone", async () => {
  const stream = await fetch(`${base}/events`);
  const reader = stream.body!.getReader();
  const first = new TextDecoder().decode((await reader.read()).value);
  expect(first).toContain("event: hello");
  const other = fetch(`${base}/slow`);
  const pending = await vi.waitFor(
    () => {
      if (!slow) throw new Error("the JSON request has not reached the server yet");
      return slow;
    },
    { timeout: 10_000, interval: 5 },
  );

  expect(tracker.endEventStreams()).toBe(1);
  let rest = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    rest += new TextDecoder().decode(value);
  }
  expect(rest).toBe(`retry: ${DRAIN_RECONNECT_MS}\n\n`);
  // The JSON request in flight is still open and finishes normally.
  pending.end("{}");
  expect((await other).status).toBe(200);
  expect(tracker.endEventStreams()).toBe(0);
});
