/**
 * Recording and replay: a learner sees that the session is recorded and passes a step on node01;
 * their instructor opens the replay from the cohort dashboard in Chromium (asciinema-player under
 * the page's CSP) and jumps to the step's marker, where the player shows the command that passed it.
 */
import { signInNewUser, adminApi, joinNewCohort } from "./accounts";
import { expect, test } from "./fixtures";
import { DashboardPage } from "./pom/DashboardPage";
import { LabPage } from "./pom/LabPage";
import { ReplayPage } from "./pom/ReplayPage";

const STEP_TITLE = "node01 にファイルを作る";

test("an instructor opens a learner's replay from the dashboard and jumps to a step marker", async ({
  page,
  learnerEmail,
  browser,
  baseURL,
}) => {
  const cohortId = await joinNewCohort(baseURL!, learnerEmail, ["hello-terminal"]);
  const instructorContext = await browser.newContext();
  const instructorEmail = await signInNewUser(instructorContext, baseURL!, "instructor");
  const added = await (
    await adminApi(baseURL!)
  ).post(`/api/cohorts/${cohortId}/members`, { data: { email: instructorEmail, role: "instructor" } });
  expect(added.ok()).toBe(true);

  const lab = new LabPage(page);
  await lab.goto("hello-terminal");
  await expect(page.getByTestId("recording-notice")).toBeVisible({ timeout: 30_000 });
  await lab.open("node01");
  // Time passing is what is tested: a pause longer than the player's idle limit (2 s) before the
  // step, which the player cuts; the marker list must give the player's time, not the file's.
  await page.waitForTimeout(3_000);
  await lab.run("echo こんにちは > /root/hello.txt");
  await lab.expectStepState("hello-file", "done", 15_000);
  await lab.run("echo after-the-step");

  const instructor = await instructorContext.newPage();
  const dashboard = new DashboardPage(instructor);
  await dashboard.goto(cohortId);
  await dashboard.row(learnerEmail).getByTestId("replay").click();
  const replay = new ReplayPage(instructor);
  await expect(replay.view()).toBeVisible();
  // One <main> per document: the layout's (the page does not nest another).
  await expect(instructor.locator("main")).toHaveCount(1);
  // The recorder writes each terminal's output within a second or so of reading it.
  await expect(async () => {
    await replay.open("node01");
    await expect(replay.marker(STEP_TITLE)).toBeVisible({ timeout: 1_000 });
  }).toPass({ timeout: 20_000, intervals: [2_000] });
  const { marker, position } = await replay.jumpTo(STEP_TITLE);
  expect(position).toBeCloseTo(marker, 1);
  await expect(replay.screen()).toContainText("/root/hello.txt");
  await expect(replay.screen()).not.toContainText("after-the-step");
  await instructorContext.close();
});
