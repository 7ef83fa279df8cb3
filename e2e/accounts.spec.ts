/**
 * Accounts in real Chromium: the first admin signs in through the login page and makes an
 * invitation link on the admin page; a new learner opens the link, sets a name and password,
 * lands on their home and starts a lab with live terminals. Also: pages × roles (anonymous →
 * /login, learner → no admin page), the language switch, signing out.
 */
import { expect, test, type APIRequestContext } from "@playwright/test";
import { adminLogin, E2E_PASSWORD, signInNewUser } from "./accounts";
import { LabPage } from "./pom/LabPage";

test("admin invites a learner by link; the learner signs up and starts a lab", async ({ browser, baseURL }) => {
  const adminContext = await browser.newContext();
  const admin = await adminContext.newPage();
  // Every page runs under the nonce CSP: no violation may be reported on the way.
  const violations: string[] = [];
  adminContext.on("console", (m) => {
    if (/Content Security Policy/i.test(m.text())) violations.push(m.text());
  });
  const loginPage = await adminContext.request.get(`${baseURL}/login`);
  expect(loginPage.headers()["content-security-policy"]).toMatch(
    /script-src 'self' 'nonce-[A-Za-z0-9+/=]+' 'strict-dynamic'.*frame-ancestors 'none'/,
  );
  expect(loginPage.headers()["x-content-type-options"]).toBe("nosniff");
  expect(loginPage.headers()["referrer-policy"]).toBe("same-origin");
  await admin.goto("/admin/invitations");
  await expect(admin).toHaveURL(/\/login\?next=%2Fadmin%2Finvitations$/);
  const login = await adminLogin(Number(new URL(baseURL!).port));
  await admin.getByLabel("メールアドレス").fill(login.email);
  await admin.getByLabel("パスワード").fill(login.password);
  await admin.getByRole("button", { name: "ログイン" }).click();
  await expect(admin).toHaveURL(/\/admin\/invitations$/);
  await expect(admin.getByTestId("signed-in-user")).toHaveAttribute("data-role", "admin");

  const email = `new-learner-${Date.now()}@e2e.test`;
  await admin.getByLabel("メールアドレス").fill(email);
  await admin.getByRole("button", { name: "招待リンクを作成" }).click();
  const url = (await admin.getByTestId("invitation-url").textContent())!.trim();
  expect(url).toMatch(/\/invite\/[A-Za-z0-9_-]{43}$/);
  await expect(admin.getByTestId("invitations")).toContainText(email);
  expect(violations).toEqual([]);
  await adminContext.close();

  const learnerContext = await browser.newContext();
  const page = await learnerContext.newPage();
  await page.goto(new URL(url).pathname);
  await expect(page.getByText(email)).toBeVisible();
  await page.getByLabel("名前").fill("新しい受講者");
  await page.getByLabel("パスワード").fill(E2E_PASSWORD);
  await page.getByRole("button", { name: "アカウントを作成" }).click();
  await expect(page).toHaveURL(/\/$/);
  await expect(page.getByTestId("signed-in-user")).toContainText("新しい受講者");
  await expect(page.getByTestId("live-sessions")).toContainText("進行中のセッションはありません");

  await page.locator('a[data-lab="hello-terminal"]').click();
  const lab = new LabPage(page);
  await lab.open("node01");
  await lab.run("hostname");
  await lab.expectLine("node01", /^node01$/);

  // Home now offers to resume the live session.
  await page.goto("/");
  await expect(page.getByTestId("live-sessions").locator("li")).toHaveCount(1);
  await expect(page.locator('a[data-lab="hello-terminal"] [data-testid="lab-action"]')).toHaveText("再開する");

  // The link worked once.
  await page.goto(new URL(url).pathname);
  await expect(page.getByTestId("invitation-invalid")).toBeVisible();

  // Signing out ends the sign-in: pages send you to the login page again.
  await page.goto("/");
  await page.getByRole("button", { name: "ログアウト" }).click();
  await expect(page).toHaveURL(/\/login$/);
  await page.goto("/labs/hello-terminal");
  await expect(page).toHaveURL(/\/login\?next=/);
  await learnerContext.close();
});

test("English is one switch away, and stays chosen", async ({ page, context, baseURL }) => {
  await signInNewUser(context, baseURL!);
  await page.goto("/");
  await expect(page.getByRole("heading", { name: "ラボ一覧" })).toBeVisible();
  await page.getByTestId("language").selectOption("en");
  await expect(page.getByRole("heading", { name: "Labs" })).toBeVisible();
  await expect(page.locator("html")).toHaveAttribute("lang", "en");
  await page.reload();
  await expect(page.getByRole("button", { name: "Sign out" })).toBeVisible();
  // Without Origin a write is refused before anything else; with the page's own it reaches the route.
  expect((await page.request.post("/api/sessions/nope/check")).status()).toBe(403);
  const res = await page.request.post("/api/sessions/nope/check", { headers: { origin: new URL(page.url()).origin } });
  expect(res.status()).toBe(404);
  expect(((await res.json()) as { error: string }).error).toBe("Session not found.");
});

/** Pages × who asks: a redirect to /login, 200, or 404 (a page for another role). */
const PAGES: { path: string; anonymous: "login"; learner: number; admin: number }[] = [
  { path: "/", anonymous: "login", learner: 200, admin: 200 },
  { path: "/labs/hello-terminal", anonymous: "login", learner: 200, admin: 200 },
  { path: "/admin/invitations", anonymous: "login", learner: 404, admin: 200 },
];

test("pages × roles", async ({ playwright, browser, baseURL }) => {
  const anonymous = await playwright.request.newContext({ baseURL });
  const learner = await browser.newContext({ baseURL });
  await signInNewUser(learner, baseURL!, "learner");
  const admin = await browser.newContext({ baseURL });
  await signInNewUser(admin, baseURL!, "admin");
  const status = async (api: APIRequestContext, path: string) => (await api.get(path, { maxRedirects: 0 })).status();
  for (const row of PAGES) {
    const anon = await anonymous.get(row.path, { maxRedirects: 0 });
    expect(anon.status(), `${row.path} anonymous`).toBe(307);
    expect(anon.headers()["location"], `${row.path} anonymous`).toMatch(/\/login\?next=/);
    expect(await status(learner.request, row.path), `${row.path} learner`).toBe(row.learner);
    expect(await status(admin.request, row.path), `${row.path} admin`).toBe(row.admin);
  }
  // Public pages.
  expect(await status(anonymous, "/login")).toBe(200);
  expect(await status(anonymous, `/invite/${"x".repeat(43)}`)).toBe(200);
  // A signed-in user on /login goes home.
  expect(await status(learner.request, "/login")).toBe(307);
  await Promise.all([anonymous.dispose(), learner.close(), admin.close()]);
});
