/**
 * One time zone, in real Chromium whose own zone is New York while the platform's is Tokyo (the
 * server's default LABDECK_TIME_ZONE): every time shown — cohort list, the learner's home, the
 * dashboard's check timeline (a client component), the watch view — is Tokyo time, 24-hour, and a
 * cohort date entered as 09:00 is stored as 09:00 Tokyo and listed and shown back as 09:00.
 * Then the watch view renders the learner's terminal at the learner's size, scaled to fit its
 * narrower pane, and follows the learner's resize.
 */
import { expect, test, type Locator, type Page } from "@playwright/test";
import { E2E_PASSWORD, signInNewUser } from "./accounts";
import { DashboardPage } from "./pom/DashboardPage";
import { LabPage } from "./pom/LabPage";

const PLATFORM_ZONE = "Asia/Tokyo";
const BROWSER_ZONE = "America/New_York";

test.use({ timezoneId: BROWSER_ZONE });

/** "HH:mm" of `at` in `zone`, 24-hour. */
function clock(at: number, zone: string): string {
  return new Intl.DateTimeFormat("en-GB", { timeZone: zone, hour: "2-digit", minute: "2-digit", hourCycle: "h23" }).format(at);
}

/** Every "HH:mm" the zone's clock showed between two instants. */
function clocksBetween(from: number, to: number, zone: string): string[] {
  const out = new Set<string>();
  for (let t = from - 60_000; t <= to + 60_000; t += 30_000) out.add(clock(t, zone));
  return [...out];
}

/** The HH:mm(:ss) times in a text; fails on AM/PM or 午前/午後 (12-hour). */
function times(text: string): string[] {
  expect(text).not.toMatch(/\b(AM|PM)\b|午前|午後/);
  return [...text.matchAll(/\b(\d{2}:\d{2})(?::\d{2})?\b/g)].map((m) => m[1]!);
}

async function expectPlatformTimes(where: Locator, from: number, to: number): Promise<void> {
  const shown = times((await where.textContent()) ?? "");
  expect(shown.length, `a time in ${await where.innerHTML()}`).toBeGreaterThan(0);
  const platform = clocksBetween(from, to, PLATFORM_ZONE);
  for (const t of shown)
    expect(platform, `${t} is Tokyo time (New York showed ${clocksBetween(from, to, BROWSER_ZONE).join(", ")})`).toContain(t);
}

function terminalSize(page: Page, machine: string): Promise<{ cols: number; rows: number } | null> {
  return page.evaluate((m) => window.__labdeck?.terminals[m]?.size() ?? null, machine);
}

function terminalText(page: Page, machine: string): Promise<string> {
  return page.evaluate((m) => window.__labdeck?.terminals[m]?.text() ?? "", machine);
}

test("every time is the platform's zone, 24-hour; cohort inputs are read in it; the watch pane renders at the learner's size", async ({
  browser,
  baseURL,
}) => {
  test.setTimeout(180_000);
  // The page reports the browser's zone as New York (the premise of the test).
  const adminContext = await browser.newContext({ timezoneId: BROWSER_ZONE, viewport: { width: 1400, height: 900 } });
  await signInNewUser(adminContext, baseURL!, "admin");
  const admin = await adminContext.newPage();
  await admin.goto("/admin/cohorts");
  expect(await admin.evaluate(() => Intl.DateTimeFormat().resolvedOptions().timeZone)).toBe(BROWSER_ZONE);
  await expect(admin.getByTestId("time-zone-note")).toHaveAttribute("data-time-zone", PLATFORM_ZONE);
  await expect(admin.getByTestId("time-zone-note")).toHaveText("時刻はすべて Asia/Tokyo（JST）");

  // --- A cohort from 09:00 to 18:00 as typed into the inputs.
  const cohortName = `TZ ${Date.now()}`;
  const form = admin.getByTestId("cohort-form");
  await expect(form.getByTestId("date-zone-note").first()).toContainText("Asia/Tokyo");
  await form.getByLabel("名前").fill(cohortName);
  await form.locator('input[name="startsAt"]').fill("2026-12-01T09:00");
  await form.locator('input[name="endsAt"]').fill("2026-12-20T18:00");
  await form.locator('input[data-lab="hello-terminal"]').check();
  await form.getByRole("button", { name: "コホートを作成" }).click();
  await expect(admin).toHaveURL(/\/admin\/cohorts\/[^/]+$/);
  const cohortId = new URL(admin.url()).pathname.split("/").pop()!;
  // Shown back in the edit form as typed.
  await expect(admin.locator('input[name="startsAt"]')).toHaveValue("2026-12-01T09:00");
  await expect(admin.locator('input[name="endsAt"]')).toHaveValue("2026-12-20T18:00");
  // The list is rendered by the server in the platform zone: 09:00 there means the stored instant is 09:00 Tokyo (00:00 UTC).
  await admin.goto("/admin/cohorts");
  const row = admin.locator(`tr[data-cohort="${cohortId}"]`);
  await expect(row.locator("td").nth(1)).toContainText("09:00");
  await expect(row.locator("td").nth(2)).toContainText("18:00");
  expect(times((await row.locator("td").allTextContents()).join(" "))).toEqual(["09:00", "18:00"]);

  // --- A learner joins through the cohort's invitation link and starts the lab.
  await admin.goto(`/admin/cohorts/${cohortId}`);
  const learnerEmail = `tz-learner-${Date.now()}@e2e.test`;
  const invite = admin.getByTestId("invite-form");
  await invite.getByLabel("メールアドレス").fill(learnerEmail);
  await invite.getByRole("button", { name: "追加または招待" }).click();
  const url = (await admin.getByTestId("cohort-invitation-url").textContent())!.trim();

  // Wide: the learner's terminal has more columns than a watch pane can show at full size.
  const learnerContext = await browser.newContext({ timezoneId: BROWSER_ZONE, viewport: { width: 1800, height: 900 } });
  const learner = await learnerContext.newPage();
  await learner.goto(new URL(url).pathname);
  await learner.getByLabel("名前").fill("時差 太郎");
  await learner.getByLabel("パスワード").fill(E2E_PASSWORD);
  const startedFrom = Date.now();
  await learner.getByRole("button", { name: "アカウントを作成" }).click();
  await expect(learner).toHaveURL(/\/$/);
  await expect(learner.getByTestId("my-cohorts")).toContainText(cohortName);
  await expect(learner.getByTestId("my-cohorts")).toContainText("2026/12/01");
  await learner.locator('a[data-lab="hello-terminal"]').click();
  const lab = new LabPage(learner);
  await lab.open("node01");
  await lab.run("echo こんにちは > /root/hello.txt");
  await lab.expectStepState("hello-file", "done");
  await lab.check(); // a failing run of the next step: a second timeline entry
  const startedTo = Date.now();

  // --- Learner home: the live session's start time.
  const home = await learnerContext.newPage();
  await home.goto("/");
  await expect(home.getByTestId("time-zone-note")).toHaveAttribute("data-time-zone", PLATFORM_ZONE);
  await expectPlatformTimes(home.getByTestId("session-started"), startedFrom, startedTo + 60_000);
  times((await home.getByTestId("live-sessions").textContent())!); // the time limit's end too: 24-hour
  await home.close();

  // --- Dashboard and its check timeline (client-rendered): Tokyo time with seconds.
  const dashboard = new DashboardPage(admin);
  await dashboard.goto(cohortId);
  await dashboard.row(learnerEmail).getByRole("button", { name: "タイムライン" }).click();
  const timeline = admin.getByTestId("timeline");
  await expect(timeline.getByTestId("timeline-time").first()).toBeVisible();
  for (const time of await timeline.getByTestId("timeline-time").all()) {
    await expect(time).toHaveText(/^\d{2}:\d{2}:\d{2}$/);
    await expectPlatformTimes(time, startedFrom, Date.now());
  }

  // --- Watch: the pane (a third of 1400 px) is narrower than the learner's terminal.
  const learnerSize = (await terminalSize(learner, "node01"))!;
  expect(learnerSize.cols).toBeGreaterThan(100); // a watch pane of ~460 px holds ~55 columns at full size
  await dashboard.row(learnerEmail).getByTestId("watch").click();
  const watched = admin.getByTestId("terminal-node01");
  await expect(watched).toHaveAttribute("data-status", "connected", { timeout: 30_000 });
  await expect(watched).toHaveAttribute("data-writer-size", `${learnerSize.cols}x${learnerSize.rows}`);
  expect(await terminalSize(admin, "node01")).toEqual(learnerSize);
  const scale = Number(await watched.locator(".xterm").getAttribute("data-scale"));
  expect(scale).toBeGreaterThan(0.2);
  expect(scale).toBeLessThan(1);
  // The scaled terminal fits its pane.
  const pane = (await watched.boundingBox())!;
  const screen = (await watched.locator(".xterm-screen").boundingBox())!;
  expect(screen.width).toBeLessThanOrEqual(pane.width + 1);

  // A line as long as the learner's terminal is one line for the watcher too (no re-wrap).
  const width = learnerSize.cols - 1;
  await lab.terminal("node01").locator(".xterm").click();
  await lab.run(`printf 'W%.0s' $(seq 1 ${width}); echo`);
  const line = "W".repeat(width);
  await expect
    .poll(async () => (await terminalText(admin, "node01")).split("\n").some((l) => l.trimEnd() === line), { timeout: 20_000 })
    .toBe(true);

  // The learner makes their window narrower: the watch pane follows.
  await learner.setViewportSize({ width: 1100, height: 700 });
  await expect.poll(async () => (await terminalSize(learner, "node01"))!.cols, { timeout: 10_000 }).toBeLessThan(learnerSize.cols);
  const resized = (await terminalSize(learner, "node01"))!;
  await expect(watched).toHaveAttribute("data-writer-size", `${resized.cols}x${resized.rows}`, { timeout: 10_000 });
  expect(await terminalSize(admin, "node01")).toEqual(resized);
  // Fewer columns: a larger scale, still inside the pane.
  await expect
    .poll(async () => Number(await watched.locator(".xterm").getAttribute("data-scale")), { timeout: 10_000 })
    .toBeGreaterThan(scale);
  expect((await watched.locator(".xterm-screen").boundingBox())!.width).toBeLessThanOrEqual(pane.width + 1);
  // The watcher never resized the learner's PTY.
  await lab.run("stty size");
  await expect.poll(() => terminalText(learner, "node01"), { timeout: 10_000 }).toContain(`${resized.rows} ${resized.cols}`);

  await Promise.all([adminContext.close(), learnerContext.close()]);
});
