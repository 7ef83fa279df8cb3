/**
 * Early redirect to /login for page requests without a session cookie (a cheap check of the
 * cookie's presence only). Pages still check the session itself (server/compose/page.ts) and API
 * routes answer 401/403 on their own (server/auth/guard.ts), so nothing relies on this alone.
 */
import { getSessionCookie } from "better-auth/cookies";
import { NextResponse, type NextRequest } from "next/server";
import { pageContentSecurityPolicy } from "./server/http/security-headers";

const PUBLIC_PAGES = [/^\/login$/, /^\/invite\/[^/]+$/];

export function proxy(request: NextRequest) {
  const { pathname, search } = request.nextUrl;
  // A fresh nonce per page: Next.js reads the CSP from the request headers and puts the nonce on
  // its inline scripts; the browser gets the same policy on the response.
  const nonce = Buffer.from(crypto.randomUUID()).toString("base64");
  const csp = pageContentSecurityPolicy(nonce, process.env.NODE_ENV !== "production", { wasm: /^\/replay\//.test(pathname) });
  const pass = () => {
    const headers = new Headers(request.headers);
    headers.set("content-security-policy", csp);
    const response = NextResponse.next({ request: { headers } });
    response.headers.set("content-security-policy", csp);
    return response;
  };
  if (PUBLIC_PAGES.some((p) => p.test(pathname))) return pass();
  if (getSessionCookie(request, { cookiePrefix: "labdeck" })) return pass();
  const login = new URL("/login", request.url);
  login.searchParams.set("next", pathname + search);
  const redirect = NextResponse.redirect(login);
  redirect.headers.set("content-security-policy", csp);
  return redirect;
}

export const config = {
  // Pages only: not the API (it answers 401 itself), Next's assets or static files.
  matcher: ["/((?!api/|_next/|icon\\.svg|favicon\\.ico).*)"],
};
