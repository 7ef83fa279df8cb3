/**
 * A learner works through the steps of `hello-terminal` against real machines and the real
 * grader: feedback from the Check button, a step passing live from the background check (no
 * click, no reload), a hint, a "run in machine" button, the lab complete, and all of it back
 * after a reload.
 */
import { expect, test } from "./fixtures";
import { LabPage } from "./pom/LabPage";

/** The grader re-checks the current step every ~2 s; 10 s is what the page promises, plus slack for a busy CI host. */
const LIVE_PASS_TIMEOUT_MS = 15_000;

test("steps: check feedback, live pass, hint, run in machine, lab complete", async ({ page }) => {
  const lab = new LabPage(page);
  const checkRequests: string[] = [];
  page.on("request", (r) => {
    if (r.method() === "POST" && /\/check$/.test(new URL(r.url()).pathname)) checkRequests.push(r.url());
  });
  await lab.goto("hello-terminal");
  // Marks this document; a reload or navigation would lose it.
  await page.evaluate(() => Object.assign(window, { __e2eSameDocument: true }));

  await lab.expectStepState("hello-file", "current");
  await lab.expectStepState("node02-hostname", "locked");
  // A first visit starts with the lesson open above the steps.
  await expect(page.getByTestId("lesson-section")).toHaveAttribute("data-open", "true");
  // A locked step shows only its title, not its text.
  await expect(lab.step("node02-hostname")).toContainText("node02 のホスト名");
  await expect(lab.step("node02-hostname")).not.toContainText("/root/whoami.txt");

  // Check before doing anything: not yet, and the check's output says why.
  await lab.check();
  await expect(lab.feedback()).toHaveAttribute("data-outcome", "fail");
  await expect(lab.feedback()).toContainText("まだです");
  await expect(lab.feedback().locator("pre")).toContainText("/root/hello.txt");

  // Do the task in node01's shell; the step passes live, without a click or a reload.
  await lab.open("node01");
  await lab.run("echo こんにちは > /root/hello.txt");
  await lab.expectStepState("hello-file", "done", LIVE_PASS_TIMEOUT_MS);
  await lab.expectStepState("node02-hostname", "current");
  await expect(lab.feedback()).toHaveAttribute("data-outcome", "pass");
  await expect(lab.feedback()).toContainText("合格");
  expect(checkRequests).toHaveLength(1);
  expect(await page.evaluate(() => "__e2eSameDocument" in window)).toBe(true);

  // The hint of step 2.
  const hint = await lab.revealHint();
  await expect(hint).toContainText("ヒント");
  await expect(hint).not.toHaveText("ヒント");

  // The step's "run in node02" button switches the terminal to node02 and types the command there.
  await lab.runInMachine("node02", "node02-hostname");
  await expect(lab.tab("node02")).toHaveAttribute("aria-selected", "true");
  await lab.expectLine("node02", /hostname > \/root\/whoami\.txt$/);
  await expect(lab.complete()).toBeVisible({ timeout: LIVE_PASS_TIMEOUT_MS });
  await lab.expectStepState("node02-hostname", "done");
  await expect(lab.checkButton()).toHaveCount(0);

  // A done step can be opened again to re-read it.
  await lab.step("hello-file").getByRole("button").click();
  await expect(lab.step("hello-file")).toContainText("/root/hello.txt");
  await page.screenshot({ path: "test-results/lab-steps.png" });

  // After a reload everything comes back from the server, the revealed hint without a click.
  await page.reload();
  await expect(lab.complete()).toBeVisible();
  await expect(page.getByTestId("lesson-section")).toHaveAttribute("data-open", "false");
  await lab.expectStepState("hello-file", "done");
  await lab.expectStepState("node02-hostname", "done");
  await lab.step("node02-hostname").getByRole("button").click();
  await expect(lab.hint("node02-hostname")).toBeVisible();
});
