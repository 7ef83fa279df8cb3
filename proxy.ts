/**
 * Early redirect to /login for page requests without a session cookie (a cheap check of the
 * cookie's presence only). Pages still check the session itself (server/auth/page.ts) and API
 * routes answer 401/403 on their own (server/auth/guard.ts), so nothing relies on this alone.
 */
import { getSessionCookie } from "better-auth/cookies";
import { NextResponse, type NextRequest } from "next/server";

const PUBLIC_PAGES = [/^\/login$/, /^\/invite\/[^/]+$/];

export function proxy(request: NextRequest) {
  const { pathname, search } = request.nextUrl;
  if (PUBLIC_PAGES.some((p) => p.test(pathname))) return NextResponse.next();
  if (getSessionCookie(request, { cookiePrefix: "labdeck" })) return NextResponse.next();
  const login = new URL("/login", request.url);
  login.searchParams.set("next", pathname + search);
  return NextResponse.redirect(login);
}

export const config = {
  // Pages only: not the API (it answers 401 itself), Next's assets or static files.
  matcher: ["/((?!api/|_next/|icon\\.svg|favicon\\.ico).*)"],
};
