/**
 * The one wrapper every API route handler goes through: refusals (Denied) and bad input (zod)
 * become JSON errors `{ code, error }` with the message in the caller's language; anything else
 * is logged and answers 500 without details.
 */
import { ZodError } from "zod";
import { Denied } from "../auth/guard";
import { errorMessage, localeFromHeaders } from "../i18n/locale";
import { log } from "../log";
import { getServicesOrThrow, type Services } from "../services";

export function apiError(request: Request, status: number, code: string, extra?: Record<string, unknown>): Response {
  return Response.json({ code, error: errorMessage(localeFromHeaders(request.headers), code), ...extra }, { status });
}

export function apiRoute<C>(handler: (request: Request, context: C, services: Services) => Promise<Response>) {
  return async (request: Request, context: C): Promise<Response> => {
    try {
      return await handler(request, context, getServicesOrThrow());
    } catch (error) {
      if (error instanceof Denied) return apiError(request, error.status, error.code);
      if (error instanceof ZodError) {
        return apiError(request, 400, "badRequest", { issues: error.issues.map((i) => ({ path: i.path.join("."), message: i.message })) });
      }
      log.error({ url: request.url, err: (error as Error).message }, "API route failed");
      return apiError(request, 500, "internal");
    }
  };
}

/** The request's JSON body, or a ZodError-like 400 when it is not JSON. */
export async function jsonBody(request: Request): Promise<unknown> {
  try {
    return await request.json();
  } catch {
    throw new ZodError([{ code: "custom", path: [], message: "body must be JSON", input: undefined }]);
  }
}
