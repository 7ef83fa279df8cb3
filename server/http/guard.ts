/**
 * Request hardening shared by the HTTP server (server.ts, before Next.js reads anything) and
 * apiRoute (the same checks on the Fetch Request, so route tests and any other path see them):
 * body size limits (413), Origin on state-changing /api requests and WebSocket upgrades (403),
 * and the server's header/request timeouts.
 */
import http, { type IncomingMessage, type ServerResponse } from "node:http";
import { errorMessage, localeFromHeaders } from "../i18n/locale";
import type { Logger } from "pino";
import { log as processLog } from "../log";
import { tagRequest } from "./request-id";
import { CLIENT_ADDRESS_HEADER, clientAddress } from "../throttle";

/** JSON bodies of every route: far above any form the app sends. */
export const JSON_BODY_LIMIT = 64 * 1024;
/** Routes that take an upload (CSV import) get this much; the route itself enforces its own bound too. */
export const UPLOAD_BODY_LIMIT = 2 * 1024 * 1024;
const UPLOAD_PATHS = [/^\/api\/cohorts\/[^/]+\/import$/];

/** HTTP server timeouts: a client that has not sent its headers / whole request by then is cut. */
export const HEADERS_TIMEOUT_MS = 15_000;
export const REQUEST_TIMEOUT_MS = 60_000;
export const KEEP_ALIVE_TIMEOUT_MS = 5_000;

const STATE_CHANGING = new Set(["POST", "PUT", "PATCH", "DELETE"]);

export function bodyLimitFor(pathname: string): number {
  return UPLOAD_PATHS.some((p) => p.test(pathname)) ? UPLOAD_BODY_LIMIT : JSON_BODY_LIMIT;
}

/** The origin (scheme://host[:port]) of a URL such as publicUrl(env). */
export function originOf(url: string): string {
  return new URL(url).origin;
}

/**
 * Why a request must be refused for its Origin, or null. State-changing requests to /api/* need
 * an Origin header equal to the public origin; a missing one is refused (every browser sends it
 * on POST/PUT/PATCH/DELETE, so only a non-browser or a forged request lacks it).
 */
export function originRefusal(
  method: string,
  pathname: string,
  origin: string | null | undefined,
  allowed: string,
): "missingOrigin" | "badOrigin" | null {
  if (!STATE_CHANGING.has(method.toUpperCase()) || !pathname.startsWith("/api/")) return null;
  if (!origin) return "missingOrigin";
  return origin === allowed ? null : "badOrigin";
}

/** The same rule for a WebSocket upgrade (always checked, whatever the method). */
export function upgradeOriginRefusal(origin: string | null | undefined, allowed: string): "missingOrigin" | "badOrigin" | null {
  if (!origin) return "missingOrigin";
  return origin === allowed ? null : "badOrigin";
}

/** A declared Content-Length over the limit (chunked bodies are counted as they arrive, see guardNodeRequest). */
export function declaredTooLarge(contentLength: string | null | undefined, limit: number): boolean {
  if (contentLength === null || contentLength === undefined || contentLength === "") return false;
  const n = Number(contentLength);
  return !Number.isFinite(n) || n > limit;
}

function sendJsonError(req: IncomingMessage, res: ServerResponse, status: number, code: string): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  const locale = localeFromHeaders(new Headers({ cookie: String(req.headers.cookie ?? "") }));
  const body = JSON.stringify({ code, error: errorMessage(locale, code) });
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(body), connection: "close" });
  res.end(body);
}

/**
 * Checks a request before it reaches Next.js. Returns false when it has answered it (403/413);
 * otherwise lets it through with a byte counter on the body: a chunked body that grows past the
 * limit is dropped (never buffered), answered 413 and the connection closed.
 */
export function guardNodeRequest(
  req: IncomingMessage,
  res: ServerResponse,
  allowedOrigin: () => string,
  trustedProxies: readonly string[] = [],
): boolean {
  const method = req.method ?? "GET";
  // Whatever the client sent under this name is replaced by the address this server believes.
  req.headers[CLIENT_ADDRESS_HEADER] = clientAddress(req, trustedProxies);
  let pathname: string;
  try {
    pathname = new URL(req.url ?? "/", "http://localhost").pathname;
  } catch {
    sendJsonError(req, res, 400, "badRequest");
    return false;
  }
  const refusal = originRefusal(method, pathname, req.headers.origin, allowedOrigin());
  if (refusal) {
    drainAndClose(req, res, 403, refusal);
    return false;
  }
  const limit = bodyLimitFor(pathname);
  if (declaredTooLarge(req.headers["content-length"], limit)) {
    drainAndClose(req, res, 413, "bodyTooLarge");
    return false;
  }
  // The counting stream: the HTTP parser hands each body chunk to req.push(); past the limit the
  // chunks are dropped, the request answered 413 and the socket closed once it is written.
  let seen = 0;
  let over = false;
  const push = req.push.bind(req);
  req.push = (chunk: unknown, encoding?: BufferEncoding) => {
    if (chunk === null) return over ? true : push(chunk, encoding);
    if (over) return true;
    seen += (chunk as Buffer).length ?? 0;
    if (seen > limit) {
      over = true;
      sendJsonError(req, res, 413, "bodyTooLarge");
      res.once("finish", () => req.socket.destroy());
      return true;
    }
    return push(chunk, encoding);
  };
  return true;
}

/** Answers at once and closes the connection; the body (if any) is never read into memory. */
function drainAndClose(req: IncomingMessage, res: ServerResponse, status: number, code: string): void {
  sendJsonError(req, res, status, code);
  res.once("finish", () => req.socket.destroy());
}

/**
 * Request header bytes Node reads before answering 431 itself: 1 MiB. A page on a learner's
 * machine can set cookies for the whole preview domain (12 of 3.8 KB fill Node's 16 KiB default),
 * which would stop every later preview in that browser before the proxy could drop them.
 */
export const MAX_HEADER_BYTES = 1024 * 1024;
/** Request header bytes Labdeck's own pages, APIs and sockets take (Node's default): beyond, 431. */
export const APP_HEADER_BYTES = 16 * 1024;

/** The bytes of a request's head as received: request line and header lines. */
export function headerBytes(req: IncomingMessage): number {
  let bytes = (req.method ?? "").length + (req.url ?? "").length + 12;
  for (let i = 0; i + 1 < req.rawHeaders.length; i += 2) bytes += req.rawHeaders[i]!.length + req.rawHeaders[i + 1]!.length + 4;
  return bytes;
}

/** Options for http.createServer: half-open requests (slow headers, a body that never ends) are cut. */
export const SERVER_OPTIONS = {
  maxHeaderSize: MAX_HEADER_BYTES,
  headersTimeout: HEADERS_TIMEOUT_MS,
  requestTimeout: REQUEST_TIMEOUT_MS,
  keepAliveTimeout: KEEP_ALIVE_TIMEOUT_MS,
  // Node checks the two timeouts on this interval (default 30 s): tighter, so they bite promptly.
  connectionsCheckingInterval: 1_000,
} as const;

/**
 * The app's HTTP server (server.ts): a request id (request-id.ts), health/metrics paths, then the
 * guard, then Next.js.
 * `handle` is Next's request handler; tests give it another that reads the body as Next does.
 */
export function createAppServer(deps: {
  ops: (req: IncomingMessage, res: ServerResponse) => boolean;
  allowedOrigin: () => string;
  /** LABDECK_TRUSTED_PROXIES: peers whose X-Forwarded-For is believed. */
  trustedProxies?: readonly string[];
  handle: (req: IncomingMessage, res: ServerResponse) => Promise<unknown> | unknown;
  /**
   * The web preview (server/preview/proxy.ts): answers requests for preview hosts, which are a
   * lab machine's pages with limits of their own, never Labdeck's (no ops paths, no API guard).
   */
  preview?: (req: IncomingMessage, res: ServerResponse) => boolean;
  /** Where request lines go (request-id.ts); the process log by default. */
  log?: Logger;
}): http.Server {
  return http.createServer(SERVER_OPTIONS, (req, res) => {
    tagRequest(req, res, deps.log ?? processLog);
    if (deps.preview?.(req, res)) return;
    if (headerBytes(req) > APP_HEADER_BYTES) return drainAndClose(req, res, 431, "headersTooLarge");
    if (deps.ops(req, res)) return;
    if (!guardNodeRequest(req, res, deps.allowedOrigin, deps.trustedProxies)) return;
    void deps.handle(req, res);
  });
}
