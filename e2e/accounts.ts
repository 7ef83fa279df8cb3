/**
 * Accounts for e2e tests, made the way people make them: the first admin (whose one-time link the
 * server prints at its first start; e2e/serve.ts follows it and keeps the login in a file) invites a user through the API, and
 * the user accepts the invitation, which signs their browser context in.
 */
import { randomBytes } from "node:crypto";
import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { request as playwrightRequest, type APIRequestContext, type BrowserContext } from "@playwright/test";

/** Where e2e/serve.ts keeps the first admin's login for the server on `port`. */
export function adminLoginFile(port: number): string {
  return path.join(os.tmpdir(), `labdeck-e2e-${port}-admin.json`);
}

export const E2E_PASSWORD = "e2e password 12345";

/**
 * Follows the first admin's one-time link from the server's banner the way the admin would:
 * chooses a password through the invitation API (what /invite/<token> posts). Returns the login.
 */
export async function acceptFirstAdminLink(link: string, email: string): Promise<{ email: string; password: string }> {
  const url = new URL(link);
  const token = url.pathname.split("/").pop()!;
  const password = randomBytes(12).toString("base64url");
  const response = await fetch(new URL("/api/invitations/accept", url.origin), {
    method: "POST",
    headers: { "content-type": "application/json", origin: url.origin },
    body: JSON.stringify({ token, name: "Admin", password }),
  });
  if (response.status !== 201) throw new Error(`first admin link ${url.pathname}: ${response.status} ${await response.text()}`);
  return { email, password };
}

/** How long adminLogin waits for e2e/serve.ts to have followed the first admin's link, in ms. */
const ADMIN_LOGIN_WAIT_MS = 30_000;

export async function adminLogin(port: number): Promise<{ email: string; password: string }> {
  // serve.ts writes the file once the link is followed, just after the server starts listening.
  for (const deadline = Date.now() + ADMIN_LOGIN_WAIT_MS; ;) {
    try {
      return JSON.parse(await fs.readFile(adminLoginFile(port), "utf8")) as { email: string; password: string };
    } catch (error) {
      if (Date.now() > deadline) throw error;
      await new Promise((r) => setTimeout(r, 200));
    }
  }
}

/**
 * An API client signed in as the first admin, one per worker: better-auth limits sign-ins per
 * client address (3 per 10 s), and every e2e request comes from 127.0.0.1.
 */
let adminApiOnce: Promise<APIRequestContext> | null = null;
export function adminApi(baseURL: string): Promise<APIRequestContext> {
  adminApiOnce ??= (async () => {
    const port = Number(new URL(baseURL).port);
    const api = await playwrightRequest.newContext({ baseURL, extraHTTPHeaders: { origin: baseURL } });
    const res = await api.post("/api/auth/sign-in/email", { data: await adminLogin(port) });
    if (!res.ok()) throw new Error(`admin sign-in failed: HTTP ${res.status()} ${await res.text()}`);
    return api;
  })();
  adminApiOnce.catch(() => (adminApiOnce = null));
  return adminApiOnce;
}

let counter = 0;

/** An invitation for a new user with `role`, made by the first admin: the email and the invitation's token. */
async function inviteNewUser(baseURL: string, role: "learner" | "instructor" | "admin"): Promise<{ email: string; token: string }> {
  const admin = await adminApi(baseURL);
  const email = `${role}-${Date.now()}-${++counter}@e2e.test`;
  const created = await admin.post("/api/invitations", { data: { email, role } });
  if (!created.ok()) throw new Error(`invitation failed: HTTP ${created.status()} ${await created.text()}`);
  const { url } = (await created.json()) as { url: string };
  return { email, token: url.slice(url.lastIndexOf("/") + 1) };
}

/** A new user with `role`, signed in in `context` (its cookies). Returns the email. */
export async function signInNewUser(
  context: BrowserContext,
  baseURL: string,
  role: "learner" | "instructor" | "admin" = "learner",
): Promise<string> {
  const { email, token } = await inviteNewUser(baseURL, role);
  const accepted = await context.request.post(`${baseURL}/api/invitations/accept`, {
    data: { token, name: `E2E ${role}`, password: E2E_PASSWORD },
    headers: { origin: baseURL },
  });
  if (!accepted.ok()) throw new Error(`accepting the invitation failed: HTTP ${accepted.status()} ${await accepted.text()}`);
  return email;
}

/**
 * A new user signed in over HTTP alone, for a browser Playwright does not drive (Firefox over
 * WebDriver BiDi): the email and the session cookies the server set, to put into that browser.
 */
export async function newUserCookies(
  baseURL: string,
  role: "learner" | "instructor" | "admin" = "learner",
): Promise<{ email: string; cookies: { name: string; value: string }[] }> {
  const { email, token } = await inviteNewUser(baseURL, role);
  const accepted = await fetch(`${baseURL}/api/invitations/accept`, {
    method: "POST",
    headers: { "content-type": "application/json", origin: baseURL },
    body: JSON.stringify({ token, name: `E2E ${role}`, password: E2E_PASSWORD }),
  });
  if (!accepted.ok) throw new Error(`accepting the invitation failed: HTTP ${accepted.status} ${await accepted.text()}`);
  const cookies = accepted.headers.getSetCookie().map((line) => {
    const [pair] = line.split(";");
    const at = pair!.indexOf("=");
    return { name: pair!.slice(0, at).trim(), value: pair!.slice(at + 1).trim() };
  });
  if (!cookies.length) throw new Error("accepting the invitation set no cookie");
  return { email, cookies };
}

/**
 * Puts an existing learner into a new cohort with `labs` (learners may start only their cohorts'
 * labs), the way an admin does it: create the cohort, add the member by email.
 */
export async function joinNewCohort(baseURL: string, email: string, labs: readonly string[]): Promise<string> {
  const admin = await adminApi(baseURL);
  const created = await admin.post("/api/cohorts", { data: { name: `e2e ${email}`, labs } });
  if (!created.ok()) throw new Error(`cohort failed: HTTP ${created.status()} ${await created.text()}`);
  const { cohort } = (await created.json()) as { cohort: { id: string } };
  const added = await admin.post(`/api/cohorts/${cohort.id}/members`, { data: { email, role: "learner" } });
  if (!added.ok()) throw new Error(`adding ${email} failed: HTTP ${added.status()} ${await added.text()}`);
  return cohort.id;
}
