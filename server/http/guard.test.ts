/**
 * The app's HTTP path (createAppServer, exactly what server.ts listens with) on loopback, with
 * Next.js replaced at the far edge by a handler that buffers the whole body as Next does before a
 * route reads it: body limits bite before that handler sees a byte too many, origins are checked,
 * half-open requests are cut. RSS is measured around a 200 MiB body attack, with the p99 of
 * small requests served meanwhile (printed; no target).
 */
import http from "node:http";
import net from "node:net";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  APP_HEADER_BYTES,
  createAppServer,
  headerBytes,
  HEADERS_TIMEOUT_MS,
  JSON_BODY_LIMIT,
  MAX_HEADER_BYTES,
  UPLOAD_BODY_LIMIT,
} from "./guard";

let server: http.Server;
let base: string;
let origin: string;
/** Bytes the stand-in for Next.js buffered over all requests. */
let buffered = 0;
/** The client address header the stand-in saw on each request. */
const seenAddresses: string[] = [];

beforeAll(async () => {
  server = createAppServer({
    ops: (req, res) => {
      if (req.url !== "/healthz") return false;
      res.end("ok");
      return true;
    },
    allowedOrigin: () => origin,
    handle: async (req, res) => {
      seenAddresses.push(String(req.headers["x-labdeck-client-address"]));
      const chunks: Buffer[] = [];
      for await (const chunk of req) {
        chunks.push(chunk as Buffer);
        buffered += (chunk as Buffer).length;
      }
      res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ bytes: Buffer.concat(chunks).length }));
    },
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  origin = base;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

const post = (path: string, body: string, headers: Record<string, string> = {}) =>
  fetch(`${base}${path}`, { method: "POST", headers: { origin, "content-type": "application/json", ...headers }, body });

/** Sends `total` bytes chunked (no Content-Length) as fast as the server takes them; resolves with the status, if any, and the bytes written. */
function chunkedAttack(path: string, total: number): Promise<{ status: number | null; written: number }> {
  return new Promise((resolve) => {
    const req = http.request(`${base}${path}`, { method: "POST", headers: { origin, "content-type": "application/json" } });
    let written = 0;
    let status: number | null = null;
    let done = false;
    const finish = () => {
      if (done) return;
      done = true;
      resolve({ status, written });
    };
    req.on("response", (res) => {
      status = res.statusCode ?? null;
      res.resume();
      res.on("end", finish);
      res.on("error", finish);
    });
    req.on("error", finish);
    req.on("close", finish);
    const chunk = Buffer.alloc(1024 * 1024, 0x41);
    const pump = () => {
      while (written < total && !done) {
        written += chunk.length;
        if (!req.write(chunk)) return void req.once("drain", pump);
      }
      if (!done) req.end();
    };
    pump();
  });
}

const mib = (n: number) => Math.round((n / 1024 / 1024) * 10) / 10;

describe("body limits before parsing (Next.js replaced by a body-buffering stand-in)", () => {
  it("a small JSON body reaches the route; one byte over 64 KiB does not", async () => {
    expect((await post("/api/x", "x".repeat(JSON_BODY_LIMIT))).status).toBe(200);
    const res = await post("/api/x", "x".repeat(JSON_BODY_LIMIT + 1));
    expect(res.status).toBe(413);
    expect(await res.json()).toMatchObject({ code: "bodyTooLarge" });
  });

  it("the CSV import route takes up to 2 MiB", async () => {
    expect((await post("/api/cohorts/c1/import", "x".repeat(UPLOAD_BODY_LIMIT), { "content-type": "text/csv" })).status).toBe(200);
    expect((await post("/api/cohorts/c1/import", "x".repeat(UPLOAD_BODY_LIMIT + 1), { "content-type": "text/csv" })).status).toBe(413);
  });

  it("limits cover better-auth's routes and pages too", async () => {
    expect((await post("/api/auth/sign-in/email", "x".repeat(JSON_BODY_LIMIT + 1))).status).toBe(413);
    expect((await post("/login", "x".repeat(JSON_BODY_LIMIT + 1))).status).toBe(413);
  });

  it("a 200 MiB body (declared, then chunked) is refused without the server's memory growing; small requests keep being served", async () => {
    global.gc?.();
    const before = process.memoryUsage().rss;
    const bufferedBefore = buffered;
    const latencies: number[] = [];
    let attacking = true;
    const probe = (async () => {
      while (attacking) {
        const t = performance.now();
        const res = await post("/api/probe", "{}");
        await res.arrayBuffer();
        latencies.push(performance.now() - t);
      }
    })();
    // Declared: answered from the headers alone.
    const declared = await new Promise<number>((resolve, reject) => {
      const req = http.request(`${base}/api/invitations/accept`, {
        method: "POST",
        headers: { origin, "content-type": "application/json", "content-length": String(200 * 1024 * 1024) },
      });
      req.on("response", (res) => resolve(res.statusCode ?? 0));
      req.on("error", reject);
      req.write(Buffer.alloc(64 * 1024));
    });
    expect(declared).toBe(413);
    // Chunked: counted as it arrives, cut past the limit.
    // Four attackers at once, each reconnecting after being cut, until 200 MiB have been pushed at the server.
    const results: { status: number | null; written: number }[] = [];
    let pushed = 0;
    await Promise.all(
      [1, 2, 3, 4].map(async () => {
        while (pushed < 200 * 1024 * 1024) {
          const r = await chunkedAttack("/api/auth/sign-in/email", 200 * 1024 * 1024);
          pushed += r.written;
          results.push(r);
        }
      }),
    );
    attacking = false;
    await probe;
    const after = process.memoryUsage().rss;
    latencies.sort((a, b) => a - b);
    const p99 = latencies[Math.floor(latencies.length * 0.99)] ?? NaN;
    const written = results.reduce((n, r) => n + r.written, 0);
    console.log(
      `200 MiB body attack: RSS before ${mib(before)} MiB, after ${mib(after)} MiB (+${mib(after - before)}); ` +
        `attackers wrote ${mib(written)} MiB chunked over ${results.length} connections, each cut past the limit; stand-in buffered ${mib(buffered - bufferedBefore)} MiB; ` +
        `small requests meanwhile: ${latencies.length}, p99 ${p99.toFixed(1)} ms`,
    );
    for (const r of results) expect(r.status === 413 || r.status === null).toBe(true);
    expect(results.some((r) => r.status === 413)).toBe(true);
    // The stand-in for Next.js never held more than the limit (plus one chunk) per request.
    expect(buffered - bufferedBefore).toBeLessThan(results.length * (JSON_BODY_LIMIT + 1024 * 1024));
    expect(written).toBeGreaterThanOrEqual(200 * 1024 * 1024);
    // Client and server share this process (the attackers' own buffers count too); unguarded, the stand-in alone would hold 200 MiB.
    expect(after - before).toBeLessThan(100 * 1024 * 1024);
  }, 60_000);
});

describe("Origin on state-changing /api requests", () => {
  it("refuses another origin and a missing one (403), accepts the public one; GETs and health paths need none", async () => {
    const bad = await fetch(`${base}/api/cohorts`, {
      method: "POST",
      headers: { origin: "http://127.0.0.1:1", "content-type": "application/json" },
      body: "{}",
    });
    expect(bad.status).toBe(403);
    expect(await bad.json()).toMatchObject({ code: "badOrigin" });
    for (const method of ["POST", "PUT", "PATCH", "DELETE"]) {
      const none = await new Promise<number>((resolve, reject) => {
        const req = http.request(`${base}/api/cohorts/c1`, { method, headers: { "content-type": "application/json" } }, (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        });
        req.on("error", reject);
        req.end("{}");
      });
      expect(none, method).toBe(403);
    }
    expect((await post("/api/cohorts", "{}")).status).toBe(200);
    expect((await fetch(`${base}/api/cohorts`)).status).toBe(200);
    expect((await fetch(`${base}/healthz`)).status).toBe(200);
  });

  it("answers in the caller's language", async () => {
    const res = await fetch(`${base}/api/cohorts`, {
      method: "POST",
      headers: { origin: "http://evil.example", cookie: "labdeck_locale=en" },
      body: "{}",
    });
    expect(((await res.json()) as { error: string }).error).toMatch(/another site/);
  });
});

describe("timeouts", () => {
  it(
    `a client that never finishes its headers keeps its connection until ${HEADERS_TIMEOUT_MS / 1000} s, then is cut with 408`,
    async () => {
      const socket = net.connect((server.address() as AddressInfo).port, "127.0.0.1");
      let answer = "";
      socket.on("data", (b: Buffer) => (answer += b.toString("latin1")));
      const closed = new Promise<"cut">((resolve) => socket.on("close", () => resolve("cut")));
      await new Promise((resolve) => socket.once("connect", resolve));
      socket.write("GET / HTTP/1.1\r\nHost: x\r\n");
      // Time passing is what is tested: a slow client is not cut before the header timeout.
      const early = await Promise.race([closed, new Promise<"open">((r) => setTimeout(() => r("open"), HEADERS_TIMEOUT_MS - 500))]);
      expect(early).toBe("open");
      await closed;
      // Cut by the server's request timeouts (Node answers 408 then), not reset or idled out; the
      // request timeout proper (REQUEST_TIMEOUT_MS) is past this test's own timeout.
      expect(answer).toMatch(/^HTTP\/1\.1 408 /);
    },
    HEADERS_TIMEOUT_MS + 10_000,
  );
});

describe("client address (X-Forwarded-For believed only from LABDECK_TRUSTED_PROXIES)", () => {
  const req = (peer: string, xff?: string) =>
    ({ socket: { remoteAddress: peer }, headers: xff ? { "x-forwarded-for": xff } : {} }) as unknown as http.IncomingMessage;
  it("ignores the header from an untrusted peer, uses the last untrusted hop behind trusted ones", async () => {
    const { clientAddress } = await import("../throttle");
    expect(clientAddress(req("203.0.113.9", "1.2.3.4"), [])).toBe("203.0.113.9");
    expect(clientAddress(req("::ffff:203.0.113.9", "1.2.3.4"), ["10.0.0.1"])).toBe("203.0.113.9");
    expect(clientAddress(req("10.0.0.1", "6.6.6.6, 198.51.100.7"), ["10.0.0.1"])).toBe("198.51.100.7");
    expect(clientAddress(req("10.0.0.1", "198.51.100.7, 10.0.0.2"), ["10.0.0.1", "10.0.0.2"])).toBe("198.51.100.7");
    expect(clientAddress(req("10.0.0.1"), ["10.0.0.1"])).toBe("10.0.0.1");
  });
  it("a client-sent x-labdeck-client-address is replaced by the server", async () => {
    const res = await fetch(`${base}/api/echo-address`, {
      headers: { "x-labdeck-client-address": "1.1.1.1", "x-forwarded-for": "2.2.2.2" },
    });
    expect(res.status).toBe(200);
    expect(seenAddresses.at(-1)).toBe("127.0.0.1");
  });
});

describe("header sizes (Node reads up to MAX_HEADER_BYTES; Labdeck's own routes take APP_HEADER_BYTES)", () => {
  it("12 × 3.8 KB cookies reach a preview host; Labdeck's routes answer 431 above 16 KiB themselves", async () => {
    const previewed: number[] = [];
    const app = createAppServer({
      ops: () => false,
      allowedOrigin: () => origin,
      handle: (_req, res) => res.writeHead(200).end("app"),
      preview: (req, res) => {
        if (!String(req.headers.host).endsWith(".preview.localhost")) return false;
        previewed.push(headerBytes(req));
        res.writeHead(200).end("preview");
        return true;
      },
    });
    await new Promise<void>((resolve) => app.listen(0, "127.0.0.1", resolve));
    const port = (app.address() as AddressInfo).port;
    const get = (host: string, cookie: string) =>
      new Promise<number>((resolve, reject) => {
        const req = http.request({ host: "127.0.0.1", port, path: "/", headers: { host, cookie } }, (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        });
        req.on("error", reject);
        req.end();
      });
    const tossed = Array.from({ length: 12 }, (_, i) => `t${i}=${"x".repeat(3800)}`).join("; ");
    try {
      expect(await get("80-node01-abcdefgh12.preview.localhost", tossed)).toBe(200);
      expect(previewed[0]).toBeGreaterThan(12 * 3800);
      expect(await get("127.0.0.1", tossed)).toBe(431);
      expect(await get("127.0.0.1", "a=1")).toBe(200);
      expect(await get("127.0.0.1", "x".repeat(APP_HEADER_BYTES - 200))).toBe(200);
      // Past MAX_HEADER_BYTES even a preview is refused, by Node itself.
      expect(await get("80-node01-abcdefgh12.preview.localhost", "x".repeat(MAX_HEADER_BYTES))).toBe(431);
    } finally {
      app.closeAllConnections();
      await new Promise((resolve) => app.close(resolve));
    }
  });
});
