/** better-auth's endpoints (/api/auth/sign-in/email, /sign-out, /get-session, ...); public sign-up is disabled. */
import { getServicesOrThrow } from "@/server/services";

export const dynamic = "force-dynamic";

export const GET = (request: Request) => getServicesOrThrow().auth.handler(request);
export const POST = (request: Request) => getServicesOrThrow().auth.handler(request);
