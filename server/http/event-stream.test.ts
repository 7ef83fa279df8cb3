/**
 * eventStream (server/http/streams.ts), the SSE response of the lab page's and the dashboard's
 * event routes: events are framed as SSE, `revoke` sends the reason and ends the stream, and every
 * way a stream ends (revoke, the client going away, `open` failing) runs each onClose and gives the
 * user's stream slot back exactly once.
 */
import { describe, expect, it } from "vitest";
import { eventStream } from "./streams";

function counters() {
  const c = { released: 0, closed: 0 };
  return { c, release: () => void c.released++, onClosed: () => void c.closed++ };
}

async function readAll(response: Response): Promise<string> {
  return new Response(response.body).text();
}

describe("eventStream", () => {
  it("frames events as SSE; revoke sends the reason, ends the stream and cleans up once", async () => {
    const { c, release, onClosed } = counters();
    const response = eventStream(new Request("http://127.0.0.1/x"), release, (out) => {
      out.onClose(onClosed);
      out.send("hello", {});
      out.send("changed", { sessionId: "s1" });
      out.revoke("signedOut");
      out.send("changed", { sessionId: "after" }); // dropped: the stream has ended
      out.revoke("accessRevoked"); // a second revoke changes nothing
    });
    expect(response.headers.get("content-type")).toBe("text/event-stream; charset=utf-8");
    expect(await readAll(response)).toBe(
      'event: hello\ndata: {}\n\nevent: changed\ndata: {"sessionId":"s1"}\n\nevent: revoked\ndata: {"reason":"signedOut"}\n\n',
    );
    expect(c).toEqual({ released: 1, closed: 1 });
  });

  it("the client going away ends it: onClose runs once, the slot is released once, later sends are dropped", async () => {
    const { c, release, onClosed } = counters();
    const abort = new AbortController();
    let send: ((n: number) => void) | undefined;
    const response = eventStream(new Request("http://127.0.0.1/x", { signal: abort.signal }), release, (out) => {
      out.onClose(onClosed);
      send = (n) => out.send("n", n);
    });
    const reader = response.body!.getReader();
    send!(1);
    expect(new TextDecoder().decode((await reader.read()).value)).toBe("event: n\ndata: 1\n\n");
    abort.abort();
    abort.abort();
    send!(2);
    expect((await reader.read()).done).toBe(true);
    expect(c).toEqual({ released: 1, closed: 1 });
  });

  it("an open that fails ends the stream and still cleans up what it subscribed", async () => {
    const { c, release, onClosed } = counters();
    const response = eventStream(new Request("http://127.0.0.1/x"), release, async (out) => {
      out.onClose(onClosed);
      throw new Error("database away");
    });
    await expect(readAll(response)).rejects.toThrow();
    expect(c).toEqual({ released: 1, closed: 1 });
  });

  it("onClose after the end runs at once", async () => {
    const { c, release, onClosed } = counters();
    let later: ((fn: () => void) => void) | undefined;
    const response = eventStream(new Request("http://127.0.0.1/x"), release, (out) => {
      out.revoke("cohortEnded");
      later = out.onClose;
    });
    await readAll(response);
    later!(onClosed);
    expect(c).toEqual({ released: 1, closed: 1 });
  });
});
