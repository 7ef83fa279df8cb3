/**
 * The operators' endpoints, answered before Next.js sees the request:
 * - `GET /healthz`: the process is alive (always 200 while it serves HTTP).
 * - `GET /readyz`: this process can serve learners: the database answers, the machine provider
 *   started, the grader keeps its schedule. 200 or 503; the body names failing parts only, never
 *   an error text (no authentication, so it reveals nothing else).
 * - `GET /metrics`: Prometheus text, when `LABDECK_METRICS_TOKEN` is set and the request carries
 *   it as a bearer token (else 401), or on the separate admin listener (`LABDECK_METRICS_PORT`).
 */
import { timingSafeEqual, createHash } from "node:crypto";
import type http from "node:http";
import { metrics } from "./metrics";

/** A database that does not answer SELECT 1 within this many ms counts as down. */
export const READY_DB_TIMEOUT_MS = 2_000;

export interface ReadinessSources {
  /** Resolves when the database answers a trivial query. */
  pingDatabase(): Promise<unknown>;
  /** Whether the machine provider is started (images found, pool running). */
  machinesReady(): boolean;
  /** How far the grader is behind its schedule, ms. */
  graderLagMs(): number;
  /** Lag beyond which this process is not ready, ms. */
  maxGraderLagMs: number;
}

export interface OpsOptions {
  readiness: ReadinessSources;
  /** Bearer token for /metrics on the public listener; undefined: /metrics is not served there. */
  metricsToken?: string;
  /** The admin listener: /metrics without a token. */
  metricsOpen?: boolean;
}

export async function readiness(sources: ReadinessSources): Promise<{ ready: boolean; failing: string[] }> {
  const failing: string[] = [];
  const timeout = new Promise<never>((_, reject) => setTimeout(() => reject(new Error("timeout")), READY_DB_TIMEOUT_MS).unref());
  await Promise.race([sources.pingDatabase(), timeout]).catch(() => failing.push("database"));
  if (!sources.machinesReady()) failing.push("machines");
  if (sources.graderLagMs() > sources.maxGraderLagMs) failing.push("grader");
  return { ready: failing.length === 0, failing };
}

const digest = (s: string) => createHash("sha256").update(s).digest();

function bearerMatches(header: string | undefined, token: string): boolean {
  const given = header?.match(/^Bearer (.+)$/)?.[1];
  return given !== undefined && timingSafeEqual(digest(given), digest(token));
}

function send(res: http.ServerResponse, status: number, body: string, type = "application/json"): void {
  res.writeHead(status, { "Content-Type": type, "Cache-Control": "no-store", "X-Content-Type-Options": "nosniff" });
  res.end(body);
}

export async function serveMetrics(res: http.ServerResponse): Promise<void> {
  const { registry } = metrics();
  send(res, 200, await registry.metrics(), registry.contentType);
}

/**
 * Handles the request when it is one of the operators' paths and returns true; else false and
 * the caller passes it on. Only GET and HEAD.
 */
export function opsHandler(options: OpsOptions): (req: http.IncomingMessage, res: http.ServerResponse) => boolean {
  return (req, res) => {
    const path = (req.url ?? "").split("?")[0];
    if (path !== "/healthz" && path !== "/readyz" && path !== "/metrics") return false;
    if (req.method !== "GET" && req.method !== "HEAD") {
      res.setHeader("Allow", "GET, HEAD");
      send(res, 405, JSON.stringify({ error: "method not allowed" }));
      return true;
    }
    if (path === "/healthz") {
      send(res, 200, JSON.stringify({ status: "ok" }));
      return true;
    }
    if (path === "/readyz") {
      void readiness(options.readiness).then(
        ({ ready, failing }) =>
          send(res, ready ? 200 : 503, JSON.stringify(ready ? { status: "ready" } : { status: "not ready", failing })),
        () => send(res, 503, JSON.stringify({ status: "not ready" })),
      );
      return true;
    }
    if (options.metricsOpen) {
      void serveMetrics(res).catch(() => send(res, 500, JSON.stringify({ error: "metrics failed" })));
    } else if (!options.metricsToken) {
      send(res, 404, JSON.stringify({ error: "metrics are served on the admin port or with LABDECK_METRICS_TOKEN" }));
    } else if (!bearerMatches(req.headers.authorization, options.metricsToken)) {
      res.setHeader("WWW-Authenticate", 'Bearer realm="metrics"');
      send(res, 401, JSON.stringify({ error: "metrics need the bearer token" }));
    } else {
      void serveMetrics(res).catch(() => send(res, 500, JSON.stringify({ error: "metrics failed" })));
    }
    return true;
  };
}
