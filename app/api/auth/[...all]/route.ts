/**
 * better-auth's endpoints (/api/auth/sign-in/email, /sign-out, /get-session, ...); public sign-up
 * is disabled. Email sign-in goes through the failure limits of server/auth/sign-in-limits.ts.
 */
import { apiError, tooManyRequests } from "@/server/http/route";
import { CLIENT_ADDRESS_HEADER } from "@/server/throttle";
import { signInWithinLimits } from "@/server/auth/sign-in-limits";
import { getServicesOrThrow } from "@/server/compose/services";

export const dynamic = "force-dynamic";

export const GET = (request: Request) => getServicesOrThrow().auth.handler(request);

export async function POST(request: Request): Promise<Response> {
  const services = getServicesOrThrow();
  if (!new URL(request.url).pathname.endsWith("/sign-in/email")) return services.auth.handler(request);
  const body = (await request
    .clone()
    .json()
    .catch(() => null)) as { email?: unknown } | null;
  if (!body || typeof body.email !== "string") return apiError(request, 400, "badRequest");
  const account = body.email.trim().toLowerCase();
  const address = request.headers.get(CLIENT_ADDRESS_HEADER) ?? "unknown";
  const result = await signInWithinLimits(services.db, { account, address }, () => services.auth.handler(request));
  if ("retryAfterSeconds" in result) return tooManyRequests(request, result.retryAfterSeconds);
  return result.response;
}
