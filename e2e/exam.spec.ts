/**
 * A learner sits the practice exam (labs/exam-warmup) in Chromium against real machines: the
 * countdown from the server's clock, kept over a reload; the task list with the learner's own
 * marks and free navigation; nothing of a result while it runs; the hand-in, after which the
 * terminals are read-only; and the result page with points, the failed check's output and the
 * solution. (The reboot phase of scoring is proven on real VMs: server/exams/scoring.vm.test.ts.)
 */
import { expect, test } from "./fixtures";
import { LabPage } from "./pom/LabPage";

test("exam: countdown over a reload, marks and navigation, no result while it runs, hand-in, result", async ({ page }) => {
  const lab = new LabPage(page);
  // The catalog marks exams as such.
  await page.goto("/");
  await expect(page.locator('[data-lab="exam-warmup"] [data-testid="exam-badge"]')).toHaveText("試験");
  await expect(page.locator('[data-lab="hello-terminal"] [data-testid="exam-badge"]')).toHaveCount(0);
  await lab.goto("exam-warmup");
  const panel = page.getByTestId("exam-panel");
  await expect(panel).toHaveAttribute("data-state", "running", { timeout: 60_000 });
  const clock = page.getByTestId("exam-clock").first();
  await expect(clock).toContainText(/1[45]:\d\d/);

  // Marks and free navigation: the third task first, a flag on the second.
  const task = (id: string) => page.locator(`li[data-task-id="${id}"]`);
  await task("permissions").getByRole("button").first().click();
  await expect(page.getByTestId("exam-task")).toHaveAttribute("data-task-id", "permissions");
  await expect(page.getByTestId("exam-task")).toContainText("/srv/shared");
  await task("hostname").getByRole("button").nth(2).click();
  await expect(task("hostname")).toHaveAttribute("data-flagged", "true");

  // The work, in the terminals: one task done, one half done, one left.
  await lab.open("controlplane");
  await lab.run("mkdir -p /srv/shared; chmod 755 /srv/shared; echo made-$((6*7))");
  await lab.expectLine("controlplane", /^made-42$/);
  await lab.open("node01");
  await lab.run("echo こんにちは > /root/greeting.txt; echo greeted-$((6*7))");
  await lab.expectLine("node01", /^greeted-42$/);
  await task("greeting").getByRole("button").nth(1).click();
  await expect(task("greeting")).toHaveAttribute("data-done", "true");

  // Nothing of a result anywhere while it runs.
  await expect(page.locator("body")).not.toContainText("chmod 1777");
  await expect(page.getByTestId("exam-summary")).toHaveCount(0);
  await expect(page.locator("body")).not.toContainText("不合格");

  // A reload keeps the clock, the marks and the current task (all on the server).
  const before = await clock.textContent();
  await page.reload();
  await expect(panel).toHaveAttribute("data-state", "running", { timeout: 30_000 });
  await expect(task("hostname")).toHaveAttribute("data-flagged", "true");
  await expect(task("greeting")).toHaveAttribute("data-done", "true");
  expect(await page.getByTestId("exam-clock").first().textContent()).not.toBe("45:00");
  expect(before).toMatch(/1[45]:\d\d/);

  // Hand-in: the terminals turn read-only, then the result is linked.
  await page.getByTestId("exam-submit").click();
  await page.getByTestId("submit-confirm").click();
  await expect(panel).toHaveAttribute("data-state", /scoring|scored/, { timeout: 15_000 });
  await expect(page.getByTestId("terminals-read-only")).toBeVisible();
  await expect(panel).toHaveAttribute("data-state", "scored", { timeout: 60_000 });
  await page.getByTestId("exam-result-link").click();

  const summary = page.getByTestId("exam-summary");
  await expect(summary).toHaveAttribute("data-passed", "false", { timeout: 30_000 });
  await expect(summary).toContainText("50");
  const result = (id: string) => page.locator(`[data-testid="exam-result"] li[data-task-id="${id}"]`);
  await expect(result("greeting")).toHaveAttribute("data-points", "30");
  await expect(result("hostname")).toHaveAttribute("data-points", "0");
  await expect(result("permissions")).toHaveAttribute("data-points", "20");
  await expect(result("permissions")).toContainText("755");
  await result("permissions").getByTestId("solution").locator("summary").click();
  await expect(result("permissions").getByTestId("solution")).toContainText("chmod 1777");
  await page.screenshot({ path: "test-results/exam-result.png", fullPage: true });
});
