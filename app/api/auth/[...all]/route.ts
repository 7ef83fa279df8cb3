/**
 * better-auth's endpoints (/api/auth/sign-in/email, /sign-out, /get-session, ...); public sign-up
 * is disabled. Email sign-in is throttled per account and per client address (throttle.ts) before
 * better-auth sees it; a successful sign-in clears its account's count.
 */
import { apiError, tooManyRequests } from "@/server/http/route";
import { CLIENT_ADDRESS_HEADER, consume, forget } from "@/server/throttle";
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
  const wait = (await consume(services.db, "signInAddress", address)) ?? (await consume(services.db, "signInAccount", account));
  if (wait) return tooManyRequests(request, wait);
  const response = await services.auth.handler(request);
  if (response.ok) await forget(services.db, "signInAccount", account);
  return response;
}
