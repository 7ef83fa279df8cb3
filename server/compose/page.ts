/**
 * Page guards for server components: the signed-in user or a redirect to /login (back to the
 * page afterwards); a page for other roles answers 404. proxy.ts redirects requests without a
 * session cookie earlier; these checks are the authoritative ones.
 */
import { headers } from "next/headers";
import { notFound, redirect } from "next/navigation";
import { getServicesOrThrow } from "./services";
import type { Role } from "../auth/auth";
import { userFromHeaders, type CurrentUser } from "../auth/guard";

/** The signed-in user of this page request, or null. */
export async function pageUserOrNull(): Promise<CurrentUser | null> {
  return userFromHeaders(getServicesOrThrow().auth, await headers());
}

/** The signed-in user; redirects to /login?next=<path> otherwise. */
export async function pageUser(path: string): Promise<CurrentUser> {
  const user = await pageUserOrNull();
  if (!user) redirect(`/login?next=${encodeURIComponent(path)}`);
  return user;
}

/** The signed-in user if they have one of `roles`; 404 for other users. */
export async function pageRole(path: string, ...roles: Role[]): Promise<CurrentUser> {
  const user = await pageUser(path);
  if (!roles.includes(user.role)) notFound();
  return user;
}

/** Only same-site paths are followed after sign-in (no open redirect). */
export function safeNext(next: string | string[] | undefined): string {
  const value = Array.isArray(next) ? next[0] : next;
  return value && value.startsWith("/") && !value.startsWith("//") && !value.startsWith("/\\") ? value : "/";
}
