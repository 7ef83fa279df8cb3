/**
 * A request id for every HTTP request: a sane incoming `x-request-id` (a proxy's) is kept, else
 * one is made. It is put on the request (route code and its log lines read it), returned in the
 * response header, and logged with the request's outcome; apiRoute logs errors with it.
 */
import { randomUUID } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Logger } from "pino";

export const REQUEST_ID_HEADER = "x-request-id";

/** What an incoming id may look like: what proxies and tracing send (UUIDs, hex, base64url, dots, colons). */
const SANE_ID = /^[A-Za-z0-9._:-]{8,128}$/;

/** The incoming id when it is sane, else a new one. */
export function requestIdFor(incoming: string | string[] | undefined): string {
  return typeof incoming === "string" && SANE_ID.test(incoming) ? incoming : randomUUID();
}

/** The request id route code sees (set by the HTTP server before Next.js). */
export function requestIdOf(headers: Headers): string | undefined {
  return headers.get(REQUEST_ID_HEADER) ?? undefined;
}

/** Path segments that may be secrets (invitation tokens: `/invite/<token>`, anything token-long) never reach the log. */
export function loggablePath(url: string | undefined): string {
  let pathname: string;
  try {
    pathname = new URL(url ?? "/", "http://localhost").pathname;
  } catch {
    return "[unparsable]";
  }
  return pathname
    .split("/")
    .map((segment, i, all) => (all[i - 1] === "invite" || segment.length >= 32 ? "[redacted]" : segment))
    .join("/");
}

/** Operators' paths, polled by probes and scrapers: logged at debug, not info. */
const QUIET_PATHS = new Set(["/healthz", "/readyz", "/metrics"]);

/**
 * Gives the request its id (request header, response header) and logs its end with it: method,
 * path (secrets removed), status and time; 5xx as errors. Returns the id.
 */
export function tagRequest(req: IncomingMessage, res: ServerResponse, log: Logger): string {
  const id = requestIdFor(req.headers[REQUEST_ID_HEADER]);
  req.headers[REQUEST_ID_HEADER] = id;
  res.setHeader(REQUEST_ID_HEADER, id);
  const started = performance.now();
  res.once("close", () => {
    const path = loggablePath(req.url);
    const line = {
      reqId: id,
      method: req.method,
      path,
      status: res.statusCode,
      ms: Math.round(performance.now() - started),
      aborted: !res.writableFinished || undefined,
    };
    if (res.statusCode >= 500) log.error(line, "request failed");
    else if (QUIET_PATHS.has(path)) log.debug(line, "request");
    else log.info(line, "request");
  });
  return id;
}
