/**
 * The operators' endpoints on a real HTTP server over a real embedded PostgreSQL: /healthz,
 * /readyz (and its failure when the database stops), /metrics behind its token, and nothing
 * but GET/HEAD; the bodies name failing parts and nothing else.
 */
import fs from "node:fs/promises";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createDb, type Db } from "../db/client";
import { startEmbeddedPostgres, type EmbeddedDatabase } from "../db/embedded";
import { freePort } from "../testing/stack";
import { opsHandler } from "./http";
import { metrics, observeProcess } from "./metrics";

const TOKEN = "metrics-token-0123456789";
let dir: string;
let pg: EmbeddedDatabase;
let db: Db;
let server: http.Server;
let base: string;
let lag = 0;

beforeAll(async () => {
  dir = await fs.mkdtemp(path.join(os.tmpdir(), "labdeck-ops-"));
  await fs.chmod(dir, 0o711);
  pg = await startEmbeddedPostgres(path.join(dir, "data"), await freePort());
  db = createDb(pg.url);
  // The client's first query also opens its connection (seconds on a loaded machine): done here,
  // so /readyz's ping below, bounded by READY_DB_TIMEOUT_MS, is the running server's.
  await db.$queryRaw`SELECT 1`;
  observeProcess({
    sessionsByState: async () => ({ ready: 3, ended: 1 }),
    pool: () => ({ ready: 1, size: 2, served: { warm: 5, cold: 2 } }),
    graderLagMs: () => lag,
    dbPool: () => ({ total: 4, idle: 3, waiting: 0 }),
  });
  const ops = opsHandler({
    readiness: { pingDatabase: () => db.$queryRaw`SELECT 1`, machinesReady: () => true, graderLagMs: () => lag, maxGraderLagMs: 30_000 },
    metricsToken: TOKEN,
  });
  server = http.createServer((req, res) => {
    if (!ops(req, res)) res.writeHead(418).end("app");
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
}, 60_000);

afterAll(async () => {
  server?.close();
  await db?.$disconnect().catch(() => undefined);
  await pg?.stop().catch(() => undefined);
  await fs.rm(dir, { recursive: true, force: true });
});

describe("operators' endpoints", () => {
  it("/healthz answers without authentication", async () => {
    const r = await fetch(`${base}/healthz`);
    expect(r.status).toBe(200);
    expect(await r.json()).toEqual({ status: "ok" });
  });

  it("/readyz is ready with the database up and a grader on schedule, not ready when the grader lags", async () => {
    const r = await fetch(`${base}/readyz`);
    expect(r.status).toBe(200);
    expect(await r.json()).toEqual({ status: "ready" });
    lag = 45_000;
    const lagging = await fetch(`${base}/readyz`);
    expect(lagging.status).toBe(503);
    expect(await lagging.json()).toEqual({ status: "not ready", failing: ["grader"] });
    lag = 0;
  });

  it("/metrics needs the bearer token, then serves Prometheus text with the platform's gauges", async () => {
    expect((await fetch(`${base}/metrics`)).status).toBe(401);
    expect((await fetch(`${base}/metrics`, { headers: { authorization: "Bearer wrong" } })).status).toBe(401);
    metrics().checkSeconds.observe({ outcome: "pass", trigger: "poll" }, 0.12);
    const r = await fetch(`${base}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(r.status).toBe(200);
    expect(r.headers.get("content-type")).toContain("text/plain");
    const text = await r.text();
    expect(text).toContain('labdeck_sessions{state="ready"} 3');
    expect(text).toContain('labdeck_warm_pool_handouts{result="hit"} 5');
    expect(text).toContain('labdeck_warm_pool_handouts{result="miss"} 2');
    expect(text).toContain('labdeck_db_pool_connections{state="total"} 4');
    expect(text).toContain("labdeck_grader_lag_seconds 0");
    expect(text).toMatch(/labdeck_check_duration_seconds_count\{outcome="pass",trigger="poll"\} [1-9]/);
    expect(text).toContain("labdeck_process_resident_memory_bytes");
    expect(text).toContain("labdeck_nodejs_eventloop_lag_seconds");
  });

  it("refuses other methods and leaves every other path to the app", async () => {
    const r = await fetch(`${base}/readyz`, { method: "POST" });
    expect(r.status).toBe(405);
    expect((await fetch(`${base}/healthz2`)).status).toBe(418);
    expect((await fetch(`${base}/`)).status).toBe(418);
  });

  it("/readyz fails when the database does not answer at all, naming only the database (its ping has a timeout)", async () => {
    const hung = opsHandler({
      readiness: {
        pingDatabase: () => new Promise(() => undefined),
        machinesReady: () => true,
        graderLagMs: () => 0,
        maxGraderLagMs: 30_000,
      },
      metricsToken: TOKEN,
    });
    const other = http.createServer((req, res) => void hung(req, res));
    await new Promise<void>((r) => other.listen(0, "127.0.0.1", r));
    try {
      // Without the timeout this request would wait for ever (the test's own timeout would fail it).
      const r = await fetch(`http://127.0.0.1:${(other.address() as { port: number }).port}/readyz`);
      expect(r.status).toBe(503);
      expect(await r.json()).toEqual({ status: "not ready", failing: ["database"] });
    } finally {
      other.close();
    }
  });

  it("/readyz fails when the database is down, naming only the database; /healthz still answers", async () => {
    await pg.stop();
    const r = await fetch(`${base}/readyz`);
    expect(r.status).toBe(503);
    const body = await r.json();
    expect(body).toEqual({ status: "not ready", failing: ["database"] });
    expect((await fetch(`${base}/healthz`)).status).toBe(200);
  });
});
