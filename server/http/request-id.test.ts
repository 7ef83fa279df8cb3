/**
 * Request ids on the app's HTTP path (createAppServer, what server.ts listens with) on loopback;
 * Next.js replaced at the far edge by a handler that answers with the id it saw, and the request
 * log captured from a real pino logger.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import { Writable } from "node:stream";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createAppServer } from "./guard";
import { loggablePath, REQUEST_ID_HEADER } from "./request-id";

let server: http.Server;
let base: string;
const lines: Record<string, unknown>[] = [];
const sink = new Writable({
  write(chunk, _enc, done) {
    for (const line of String(chunk).split("\n").filter(Boolean)) lines.push(JSON.parse(line) as Record<string, unknown>);
    done();
  },
});

beforeAll(async () => {
  server = createAppServer({
    ops: () => false,
    allowedOrigin: () => base,
    log: pino({ level: "info" }, sink),
    handle: (req, res) => {
      const status = req.url === "/boom" ? 500 : 200;
      res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify({ seen: req.headers[REQUEST_ID_HEADER] }));
    },
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

async function get(path: string, headers: Record<string, string> = {}) {
  const res = await fetch(`${base}${path}`, { headers });
  const body = (await res.json()) as { seen: string };
  const id = res.headers.get(REQUEST_ID_HEADER);
  const line = () => lines.findLast((l) => l.reqId === id);
  // Every request is logged, when its response closes: a moment after the client has the body.
  await expect.poll(line, { timeout: 10_000, interval: 5 }).toBeDefined();
  return { id, seen: body.seen, line: line() };
}

describe("request ids", () => {
  it("makes an id, gives it to the handler, returns it and logs the request with it", async () => {
    const { id, seen, line } = await get("/api/labs");
    expect(id).toMatch(/^[0-9a-f-]{36}$/);
    expect(seen).toBe(id);
    expect(line).toMatchObject({ reqId: id, method: "GET", path: "/api/labs", status: 200, msg: "request", level: 30 });
  });

  it("keeps a sane incoming x-request-id and replaces anything else", async () => {
    expect((await get("/", { [REQUEST_ID_HEADER]: "proxy-7f3a9c21.trace:01" })).id).toBe("proxy-7f3a9c21.trace:01");
    for (const bad of ["short", "x".repeat(129), "a b c d e f g h", "<script>alert(1)</script>"]) {
      const { id } = await get("/", { [REQUEST_ID_HEADER]: bad });
      expect(id).not.toBe(bad);
      expect(id).toMatch(/^[0-9a-f-]{36}$/);
    }
  });

  it("logs a 5xx as an error, and never an invitation token from the path", async () => {
    expect((await get("/boom")).line).toMatchObject({ status: 500, level: 50, msg: "request failed" });
    const token = "Zm9vYmFyYmF6cXV4cXV1eGNvcmdlZ3JhdWx0Z2FycGx5";
    const { line } = await get(`/invite/${token}`);
    expect(line!.path).toBe("/invite/[redacted]");
    expect(JSON.stringify(lines)).not.toContain(token);
    expect(loggablePath("/api/sessions/cmx4pnfk3000kmx7d732rdeak/events?x=1")).toBe("/api/sessions/cmx4pnfk3000kmx7d732rdeak/events");
  });
});
