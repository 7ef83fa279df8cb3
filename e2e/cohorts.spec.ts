/**
 * Cohorts in real Chromium, one role per browser context: the admin creates a cohort, invites a
 * learner by link (and imports a CSV with a bad row), assigns an instructor; the learner signs up
 * through the link and starts the lab; the instructor's dashboard changes live as the learner
 * passes a step and fails a check; the instructor watches the learner's terminals read-only
 * (typing there does nothing; the learner sees the notice, and it goes when the instructor
 * leaves); the admin pre-provisions and ends the cohort. Saves docs/screenshots/dashboard.png.
 */
import fs from "node:fs/promises";
import { expect, test, type Page } from "@playwright/test";
import { adminLogin, E2E_PASSWORD, signInNewUser } from "./accounts";
import { DashboardPage } from "./pom/DashboardPage";
import { LabPage } from "./pom/LabPage";

const SCREENSHOT = "docs/screenshots/dashboard.png";
/** A pass is seen by the grader's polling (or the Enter nudge) within seconds. */
const LIVE_PASS_TIMEOUT_MS = 30_000;

test("admin → cohort + invitation; learner signs up and works; instructor sees it live and watches read-only", async ({
  browser,
  baseURL,
}) => {
  test.setTimeout(240_000);
  // --- Admin: create a cohort, invite a learner by link, import a CSV, assign an instructor.
  const adminContext = await browser.newContext();
  const admin = await adminContext.newPage();
  await admin.goto("/admin/cohorts");
  const login = await adminLogin(Number(new URL(baseURL!).port));
  await admin.getByLabel("メールアドレス").fill(login.email);
  await admin.getByLabel("パスワード").fill(login.password);
  await admin.getByRole("button", { name: "ログイン" }).click();
  await expect(admin).toHaveURL(/\/admin\/cohorts$/);

  const cohortName = `CKA ${Date.now()}`;
  const form = admin.getByTestId("cohort-form");
  await form.getByLabel("名前").fill(cohortName);
  await form.getByLabel("セッション制限時間（分）").fill("90");
  await form.locator('input[data-lab="hello-terminal"]').check();
  await form.getByRole("button", { name: "コホートを作成" }).click();
  await expect(admin).toHaveURL(/\/admin\/cohorts\/[^/]+$/);
  const cohortId = new URL(admin.url()).pathname.split("/").pop()!;
  await expect(admin.getByRole("heading", { name: cohortName })).toBeVisible();

  const learnerEmail = `cohort-learner-${Date.now()}@e2e.test`;
  const invite = admin.getByTestId("invite-form");
  await invite.getByLabel("メールアドレス").fill(learnerEmail);
  await invite.getByRole("button", { name: "追加または招待" }).click();
  const url = (await admin.getByTestId("cohort-invitation-url").textContent())!.trim();
  expect(url).toMatch(/\/invite\/[A-Za-z0-9_-]{43}$/);
  await expect(admin.getByTestId("pending")).toContainText(learnerEmail);

  await admin
    .getByTestId("csv-form")
    .locator('input[type="file"]')
    .setInputFiles({
      name: "class.csv",
      mimeType: "text/csv",
      buffer: Buffer.from(`email,name\ncsv-${Date.now()}@e2e.test,CSV 受講者\nnot-an-email,Bad\n${learnerEmail},Dup\n`),
    });
  await admin.getByTestId("csv-form").getByRole("button", { name: "取り込む" }).click();
  const report = admin.getByTestId("csv-report");
  await expect(report).toContainText("1 人を招待しました");
  await expect(report).toContainText("2 行は取り込まれませんでした");
  await expect(admin.locator('[data-testid="csv-problems"] tr[data-line="3"]')).toHaveAttribute("data-code", "email");
  await expect(admin.locator('[data-testid="csv-problems"] tr[data-line="4"]')).toHaveAttribute("data-code", "invited");

  // Large enough for the whole dashboard in the screenshot.
  const instructorContext = await browser.newContext({ viewport: { width: 1400, height: 1000 } });
  const instructorEmail = await signInNewUser(instructorContext, baseURL!, "instructor");
  await admin.getByTestId("assign-form").getByLabel("講師ロールのアカウントのメールアドレス").fill(instructorEmail);
  await admin.getByTestId("assign-form").getByRole("button", { name: "割り当て" }).click();
  await expect(admin.locator(`[data-testid="members"] tr[data-email="${instructorEmail}"]`)).toContainText("講師");

  // --- Learner: sign up through the link, start the lab.
  const learnerContext = await browser.newContext();
  const learner = await learnerContext.newPage();
  await learner.goto(new URL(url).pathname);
  await learner.getByLabel("名前").fill("山田 花子");
  await learner.getByLabel("パスワード").fill(E2E_PASSWORD);
  await learner.getByRole("button", { name: "アカウントを作成" }).click();
  await expect(learner).toHaveURL(/\/$/);
  await learner.locator('a[data-lab="hello-terminal"]').click();
  const lab = new LabPage(learner);
  await lab.open("node01");
  await lab.expectStepState("hello-file", "current");

  // --- Instructor: the dashboard shows the learner on step 1, then changes live.
  const instructor = await instructorContext.newPage();
  const dashboard = new DashboardPage(instructor);
  await dashboard.goto(cohortId);
  await dashboard.expectProgress(learnerEmail, 0, "hello-file");

  await lab.run("echo こんにちは > /root/hello.txt");
  await dashboard.expectProgress(learnerEmail, 1, "node02-hostname", LIVE_PASS_TIMEOUT_MS);
  // A failing check's feedback reaches the dashboard too.
  await lab.check();
  await expect(dashboard.row(learnerEmail).getByTestId("last-failure")).toContainText("/root/whoami.txt", {
    timeout: LIVE_PASS_TIMEOUT_MS,
  });
  await expect(instructor.locator('[data-testid="funnel"] g[data-step="hello-file"]')).toHaveAttribute("data-count", "1");
  await dashboard.row(learnerEmail).getByRole("button", { name: "タイムライン" }).click();
  await expect(instructor.getByTestId("timeline").locator('li[data-outcome="pass"]')).toHaveCount(1);
  await fs.mkdir("docs/screenshots", { recursive: true });
  await instructor.screenshot({ path: SCREENSHOT, fullPage: true });

  // --- Instructor watches read-only: sees the learner's typing; their own typing does nothing.
  await dashboard.row(learnerEmail).getByTestId("watch").click();
  await expect(instructor.getByTestId("watch-view")).toBeVisible();
  const watched = instructor.getByTestId("terminal-node01");
  await expect(watched).toHaveAttribute("data-status", "connected", { timeout: 30_000 });
  await expect(learner.getByTestId("watch-notice")).toContainText("E2E instructor");

  await lab.terminal("node01").locator(".xterm").click(); // focus was on the Check button
  await learner.keyboard.type("echo seen-by-$((40+2))");
  await learner.keyboard.press("Enter");
  await expect.poll(() => terminalText(instructor, "node01"), { timeout: 20_000 }).toContain("seen-by-42");

  await watched.locator(".xterm").click();
  await instructor.keyboard.type("echo typed-by-watcher-$((6*7))");
  await instructor.keyboard.press("Enter");
  // Past the browser's read-only flag too: straight over the socket, which the gateway refuses.
  await instructor.evaluate(() => window.__labdeck?.terminals.node01?.type("echo sent-by-watcher-$((6*7))\r"));
  await learner.keyboard.type("echo after-watcher-$((1+1))");
  await learner.keyboard.press("Enter");
  await expect.poll(() => terminalText(learner, "node01"), { timeout: 20_000 }).toContain("after-watcher-2");
  const learnerScreen = await terminalText(learner, "node01");
  expect(learnerScreen).not.toContain("typed-by-watcher-42");
  expect(learnerScreen).not.toContain("sent-by-watcher-42");

  // Leaving the watch view clears the learner's notice.
  await instructor.goto(`/cohorts/${cohortId}`);
  await expect(learner.getByTestId("watch-notice")).toHaveCount(0, { timeout: 20_000 });

  // --- Admin: pre-provision (the learner's live session counts), capacity, then end the cohort.
  await admin.reload();
  await admin.getByTestId("provision").getByRole("button", { name: "セッションを事前準備" }).click();
  await expect(admin.getByTestId("provision-job")).toHaveAttribute("data-state", "done", { timeout: 60_000 });
  await expect(admin.getByTestId("provision-progress")).toHaveText("1/1 セッション準備完了");
  // Pre-provisioning gave the session the cohort's time limit; extend it by 15 minutes.
  await admin.reload();
  const sessionRow = admin.getByTestId("live-cohort-sessions").locator("tr[data-session]");
  await expect(sessionRow).toHaveCount(1);
  await sessionRow.getByRole("button", { name: "+15 分" }).click();
  await expect(sessionRow).toContainText("延長しました");
  await admin.goto("/admin/capacity");
  await expect(admin.getByTestId("sessions-ready")).not.toHaveText("0");
  await admin.goto(`/admin/cohorts/${cohortId}`);
  admin.once("dialog", (d) => void d.accept());
  await admin.getByRole("button", { name: "今すぐ終了" }).click();
  await expect(admin.getByText("1 セッションを終了しました")).toBeVisible();
  await expect(admin.getByTestId("live-cohort-sessions")).toHaveCount(0);
  // The instructor of an ended cohort is told it ended; its learners' sessions are not shown.
  await instructor.goto(`/cohorts/${cohortId}`);
  await expect(instructor.getByTestId("cohort-ended")).toContainText("終了");
  await expect(instructor.getByTestId("dashboard")).toHaveCount(0);

  await Promise.all([adminContext.close(), instructorContext.close(), learnerContext.close()]);
});

test("pages × roles: learners get 404 on cohort pages; an instructor of another cohort too", async ({ browser, baseURL }) => {
  const learnerContext = await browser.newContext();
  await signInNewUser(learnerContext, baseURL!, "learner");
  const page = await learnerContext.newPage();
  for (const path of ["/admin/cohorts", "/admin/capacity", "/cohorts"]) {
    const res = await page.goto(path);
    expect(res?.status(), path).toBe(404);
  }
  const instructorContext = await browser.newContext();
  await signInNewUser(instructorContext, baseURL!, "instructor");
  const other = await instructorContext.newPage();
  expect((await other.goto("/cohorts/no-such-cohort"))?.status()).toBe(404);
  expect((await other.goto("/admin/cohorts"))?.status()).toBe(404);
  await Promise.all([learnerContext.close(), instructorContext.close()]);
});

function terminalText(page: Page, machine: string): Promise<string> {
  return page.evaluate((m) => window.__labdeck?.terminals[m]?.text() ?? "", machine);
}
