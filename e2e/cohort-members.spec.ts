/**
 * Cohorts with existing accounts, in real Chromium against the real server (production build,
 * embedded PostgreSQL): the admin adds an existing learner by email and another by CSV (the
 * report counts invited / added / already members / bad rows); the learners see the cohort's
 * labs on their home; the admin removes a learner and an instructor (and the learner no longer
 * sees the cohort); open invitations are listed with their link, copied and revoked (a revoked
 * link no longer works); an existing account opens a cohort invitation link, signs in and joins,
 * while another signed-in account cannot use it.
 */
import { expect, test, type Browser, type BrowserContext } from "@playwright/test";
import { adminApi, E2E_PASSWORD, signInNewUser } from "./accounts";
import { CohortAdminPage } from "./pom/CohortAdminPage";
import { HomePage } from "./pom/HomePage";

const LAB = "hello-terminal";

/** A browser context signed in as the first admin (the API client's cookies: no extra sign-in). */
async function adminContext(browser: Browser, baseURL: string): Promise<BrowserContext> {
  return browser.newContext({ storageState: await (await adminApi(baseURL)).storageState() });
}

async function newCohort(baseURL: string, name: string): Promise<string> {
  const res = await (await adminApi(baseURL)).post("/api/cohorts", { data: { name, labs: [LAB] } });
  expect(res.status()).toBe(201);
  return ((await res.json()) as { cohort: { id: string } }).cohort.id;
}

test("admin adds existing learners by email and by CSV; they see the cohort's labs; admin removes them", async ({ browser, baseURL }) => {
  test.setTimeout(180_000);
  const cohortName = `Members ${Date.now()}`;
  const cohortId = await newCohort(baseURL!, cohortName);
  const learnerA = await browser.newContext();
  const learnerB = await browser.newContext();
  const instructorContext = await browser.newContext();
  const emailA = await signInNewUser(learnerA, baseURL!, "learner");
  const emailB = await signInNewUser(learnerB, baseURL!, "learner");
  const instructorEmail = await signInNewUser(instructorContext, baseURL!, "instructor");
  const homeA = new HomePage(await learnerA.newPage());
  const homeB = new HomePage(await learnerB.newPage());
  await homeA.goto();
  await expect(homeA.cohort(cohortName)).toHaveCount(0);

  const admin = new CohortAdminPage(await (await adminContext(browser, baseURL!)).newPage());
  await admin.goto(cohortId);

  // By email: an existing account is a member at once, with no invitation.
  expect(await admin.addByEmail(emailA)).toBe("added");
  await expect(admin.member(emailA)).toContainText("受講者");
  await expect(admin.invitation(emailA)).toHaveCount(0);
  expect(await admin.addByEmail(emailA)).toBe("alreadyMember");
  expect(await admin.addByEmail(instructorEmail, "instructor")).toBe("added");
  await expect(admin.member(instructorEmail)).toContainText("講師");

  await homeA.goto();
  await expect(homeA.cohortLab(cohortName, LAB)).toBeVisible();

  // By CSV: an existing account added, a new email invited, a member already, a bad row.
  const newEmail = `csv-new-${Date.now()}@e2e.test`;
  const report = await admin.importCsv(`email,name\n${emailB},B\n${newEmail},New\n${emailA},A\nnot-an-email,Bad\n`);
  await expect(report.getByTestId("csv-added")).toHaveAttribute("data-count", "1");
  await expect(report.getByTestId("csv-invited")).toHaveAttribute("data-count", "1");
  await expect(report.getByTestId("csv-already")).toHaveAttribute("data-count", "1");
  await expect(report.locator('[data-testid="csv-problems"] tr[data-line="5"]')).toHaveAttribute("data-code", "email");
  await expect(report.locator(`[data-testid="csv-added-rows"] li[data-email="${emailB}"]`)).toContainText("2 行目");
  await expect(admin.member(emailB)).toBeVisible();
  await homeB.goto();
  await expect(homeB.cohortLab(cohortName, LAB)).toBeVisible();

  // The open invitation is listed with its link again, can be copied and revoked.
  const row = admin.invitation(newEmail);
  const link = (await row.getByTestId("invitation-link").textContent())!.trim();
  expect(link).toMatch(/\/invite\/[A-Za-z0-9_-]{43}$/);
  await admin.page.context().grantPermissions(["clipboard-read", "clipboard-write"], { origin: baseURL! });
  await row.getByRole("button", { name: "コピー" }).click();
  await expect(row.getByRole("button", { name: "コピーしました" })).toBeVisible();
  expect(await admin.page.evaluate(() => navigator.clipboard.readText())).toBe(link);
  await admin.revoke(newEmail);
  const stranger = await browser.newPage();
  await stranger.goto(new URL(link).pathname);
  await expect(stranger.getByTestId("invitation-invalid")).toBeVisible();
  await stranger.close();

  // Removal: the learner no longer sees the cohort; an instructor can be removed too.
  await admin.remove(emailA);
  await admin.remove(instructorEmail);
  await expect(admin.member(emailB)).toBeVisible();
  await admin.page.reload();
  await expect(admin.member(emailA)).toHaveCount(0);
  await homeA.goto();
  await expect(homeA.cohort(cohortName)).toHaveCount(0);
  await homeB.goto();
  await expect(homeB.cohortLab(cohortName, LAB)).toBeVisible();

  await Promise.all([learnerA.close(), learnerB.close(), instructorContext.close(), admin.page.context().close()]);
});

test("an existing account opens a cohort invitation link, signs in and joins; another account cannot use it", async ({
  browser,
  baseURL,
}) => {
  test.setTimeout(120_000);
  const cohortName = `Join ${Date.now()}`;
  const cohortId = await newCohort(baseURL!, cohortName);
  const setup = await browser.newContext();
  const email = await signInNewUser(setup, baseURL!, "learner");
  await setup.close();
  const api = await adminApi(baseURL!);
  const created = await api.post(`/api/cohorts/${cohortId}/invitations`, { data: { email } });
  expect(created.status()).toBe(201);
  const path = new URL(((await created.json()) as { url: string }).url).pathname;

  // Signed in as someone else: told so, no way to join.
  const otherContext = await browser.newContext();
  await signInNewUser(otherContext, baseURL!, "learner");
  const other = await otherContext.newPage();
  await other.goto(path);
  await expect(other.getByTestId("invitation-other-account")).toContainText(email);
  await expect(other.getByRole("button", { name: "参加する" })).toHaveCount(0);
  await otherContext.close();

  // The invited account, signed out: sign in from the link, come back, join.
  const context = await browser.newContext();
  const page = await context.newPage();
  await page.goto(path);
  await expect(page.getByTestId("invitation-existing")).toContainText(cohortName);
  await expect(page.getByLabel("パスワード")).toHaveCount(0); // no second account is offered
  await page.getByRole("link", { name: "ログインして参加" }).click();
  await page.getByLabel("メールアドレス").fill(email);
  await page.getByLabel("パスワード").fill(E2E_PASSWORD);
  await page.getByRole("button", { name: "ログイン" }).click();
  await expect(page).toHaveURL(new RegExp(`${path}$`));
  await page.getByRole("button", { name: "参加する" }).click();
  await expect(page).toHaveURL(/\/$/);
  const home = new HomePage(page);
  await expect(home.cohortLab(cohortName, LAB)).toBeVisible();

  // The link is used now; the cohort lists the member and no pending invitation.
  await page.goto(path);
  await expect(page.getByTestId("invitation-invalid")).toBeVisible();
  const cohort = (await (await api.get(`/api/cohorts/${cohortId}`)).json()) as { members: { email: string }[]; pending: unknown[] };
  expect(cohort.members.map((m) => m.email)).toEqual([email]);
  expect(cohort.pending).toEqual([]);
  await context.close();
});

test("/admin/invitations: the form clears after sending; open invitations listed with link, copy and revoke", async ({
  browser,
  baseURL,
}) => {
  const context = await adminContext(browser, baseURL!);
  const page = await context.newPage();
  await page.goto("/admin/invitations");
  const email = `listed-${Date.now()}@e2e.test`;
  await page.getByLabel("メールアドレス").fill(email);
  await page.getByRole("button", { name: "招待リンクを作成" }).click();
  const made = (await page.getByTestId("invitation-url").textContent())!.trim();
  expect(made).toMatch(/\/invite\/[A-Za-z0-9_-]{43}$/);
  await expect(page.getByLabel("メールアドレス")).toHaveValue("");
  // Listed again after a reload (the token is kept sealed, not only shown at creation).
  await page.reload();
  const row = page.locator(`[data-testid="open-invitations"] tr[data-email="${email}"]`);
  await expect(row.getByTestId("invitation-link")).toHaveText(made);
  await expect(row.getByRole("button", { name: "コピー" })).toBeVisible();
  page.once("dialog", (d) => void d.accept());
  await row.getByRole("button", { name: "取り消す" }).click();
  await expect(row).toHaveCount(0);
  await expect(page.locator(`[data-testid="invitations"] tr`, { hasText: email })).toContainText("取り消し済み");
  await context.close();
});
