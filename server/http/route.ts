/**
 * The one wrapper every API route handler goes through (made with the process's services by
 * server/compose/route.ts): refusals (Denied) and bad input (zod)
 * become JSON errors `{ code, error }` with the message in the caller's language; anything else
 * is logged and answers 500 without details.
 *
 * Before the handler runs: a state-changing request (POST/PUT/PATCH/DELETE) must carry an Origin
 * equal to the public URL's (403 missingOrigin / badOrigin), a declared body over the route's
 * limit is 413, and a NUL byte in the path, the query or a route parameter is 400. server.ts
 * applies the origin and size rules too, before Next.js reads anything (guard.ts).
 */
import { Prisma } from "../db/generated/client";
import { ZodError } from "zod";
import { Denied } from "../denied";
import type { Worded } from "../worded";
import { errorMessage, localeFromHeaders } from "../i18n/locale";
import { log } from "../log";
import { errorForLog } from "../startup-failure";
import { bodyLimitFor, declaredTooLarge, originRefusal } from "./guard";
import { loggablePath, requestIdOf } from "./request-id";

/** `{ code, error }` with the message in the caller's language; `code` may carry values (server/worded.ts). */
export function apiError(request: Request, status: number, code: string | Worded, extra?: Record<string, unknown>): Response {
  const { key, params } = typeof code === "string" ? { key: code, params: undefined } : code;
  return Response.json({ code: key, error: errorMessage(localeFromHeaders(request.headers), key, params), ...extra }, { status });
}

/** 429 with Retry-After: a rate limit (throttle.ts) was hit. */
export function tooManyRequests(request: Request, retryAfterSeconds: number): Response {
  const res = apiError(request, 429, "tooManyRequests", { retryAfterSeconds });
  res.headers.set("retry-after", String(retryAfterSeconds));
  return res;
}

/** Bad input found while reading a request (not JSON, too large, NUL bytes): the status and code to answer. */
export class BadInput extends Error {
  constructor(
    readonly status: 400 | 413 | 415,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

/** What a route needs from its process: the services handed to handlers and the one origin that may change state. */
export interface RouteContext<S> {
  services: S;
  /** The public URL's origin (state-changing requests must carry it). */
  publicOrigin: string;
}

/** The route wrapper over the services `context()` gives (read at each request: the process sets them once started). */
export function routeWith<S>(context: () => RouteContext<S>) {
  return function apiRoute<C>(handler: (request: Request, context: C, services: S) => Promise<Response>) {
    return handleWith<S, C>(context, handler);
  };
}

function handleWith<S, C>(context: () => RouteContext<S>, handler: (request: Request, context: C, services: S) => Promise<Response>) {
  return async (request: Request, routeContext: C): Promise<Response> => {
    try {
      const { services, publicOrigin } = context();
      const refused = await precheck(request, routeContext, publicOrigin);
      if (refused) return refused;
      return await handler(request, routeContext, services);
    } catch (error) {
      if (error instanceof Denied) return apiError(request, error.status, error.code);
      if (error instanceof BadInput) return apiError(request, error.status, error.code, { issues: [{ path: "", message: error.message }] });
      if (error instanceof ZodError) {
        return apiError(request, 400, "badRequest", { issues: error.issues.map((i) => ({ path: i.path.join("."), message: i.message })) });
      }
      // A reference to a row that does not exist (an unknown cohortId, say) is the caller's mistake.
      if (error instanceof Prisma.PrismaClientKnownRequestError && error.code === "P2003") {
        return apiError(request, 400, "badRequest", {
          issues: [{ path: String(error.meta?.field_name ?? ""), message: "refers to something that does not exist" }],
        });
      }
      if (error instanceof Prisma.PrismaClientKnownRequestError && error.code === "P2025") return apiError(request, 404, "notFound");
      // With its stack (pino's err serializer) and the request's id, which the client got in its header.
      log.error({ reqId: requestIdOf(request.headers), path: loggablePath(request.url), err: errorForLog(error) }, "API route failed");
      return apiError(request, 500, "internal");
    }
  };
}

async function precheck(request: Request, context: unknown, publicOrigin: string): Promise<Response | null> {
  const url = new URL(request.url);
  const refusal = originRefusal(request.method, url.pathname, request.headers.get("origin"), publicOrigin);
  if (refusal) return apiError(request, 403, refusal);
  if (declaredTooLarge(request.headers.get("content-length"), bodyLimitFor(url.pathname))) return apiError(request, 413, "bodyTooLarge");
  let raw = url.pathname + url.search;
  try {
    raw = decodeURIComponent(raw);
  } catch {
    return apiError(request, 400, "badRequest");
  }
  if (raw.includes("\0")) return apiError(request, 400, "badRequest", { issues: [{ path: "", message: "NUL bytes are not allowed" }] });
  const params = (context as { params?: Promise<Record<string, string | string[]>> } | undefined)?.params;
  if (params) {
    const values = Object.values(await params).flat();
    if (values.some((v) => typeof v === "string" && v.includes("\0"))) {
      return apiError(request, 400, "badRequest", { issues: [{ path: "", message: "NUL bytes are not allowed" }] });
    }
  }
  return null;
}

/**
 * The request's JSON body: 415 unless it is sent as JSON, 413 past the route's limit (counted as
 * it arrives, never buffered beyond it), 400 when it is not JSON or holds a NUL byte in a string.
 * An empty body with no Content-Type reads as `{}` (routes whose body is optional).
 */
export async function jsonBody(request: Request): Promise<unknown> {
  const type = (request.headers.get("content-type") ?? "").split(";")[0]!.trim().toLowerCase();
  const text = await readText(request, bodyLimitFor(new URL(request.url).pathname));
  if (type !== "application/json" && !(type === "" && text === "")) {
    throw new BadInput(415, "unsupportedMediaType", "body must be sent as application/json");
  }
  if (text === "") throw new ZodError([{ code: "custom", path: [], message: "body must be JSON", input: undefined }]);
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new ZodError([{ code: "custom", path: [], message: "body must be JSON", input: undefined }]);
  }
  if (text.includes("\\u0000") && hasNul(value)) throw new BadInput(400, "badRequest", "NUL bytes are not allowed");
  return value;
}

function hasNul(value: unknown): boolean {
  if (typeof value === "string") return value.includes("\0");
  if (Array.isArray(value)) return value.some(hasNul);
  if (value && typeof value === "object") return Object.entries(value).some(([k, v]) => k.includes("\0") || hasNul(v));
  return false;
}

async function readText(request: Request, limit: number): Promise<string> {
  const bytes = await readBodyBytes(request, limit + 1);
  if (bytes.byteLength > limit) throw new BadInput(413, "bodyTooLarge", `body is over ${limit} bytes`);
  return Buffer.from(bytes).toString("utf8");
}

/**
 * The body's first `max` bytes at most, never more in memory: reading stops (and the stream is
 * cancelled) once `max` bytes are in. Callers pass their limit + 1 to tell "too large" apart.
 */
export async function readBodyBytes(request: Request, max: number): Promise<Uint8Array> {
  if (!request.body) return new Uint8Array();
  const reader = request.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  while (size < max) {
    const { done, value } = await reader.read();
    if (done) return Buffer.concat(chunks);
    chunks.push(value);
    size += value.byteLength;
  }
  await reader.cancel().catch(() => undefined);
  return Buffer.concat(chunks).subarray(0, max);
}
