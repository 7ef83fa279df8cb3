/**
 * A learner in real Chromium: three live terminals to real sshd hosts through the gateway.
 */
import { expect, test } from "./fixtures";
import { LabPage } from "./pom/LabPage";

test("catalog lists the labs and links to a lab page", async ({ page }) => {
  await page.goto("/");
  const link = page.getByRole("link", { name: /ターミナル入門/ });
  await expect(link).toBeVisible();
  await link.click();
  await expect(page).toHaveURL(/\/labs\/hello-terminal$/);
  await expect(page.getByRole("tab")).toHaveCount(3);
});

test("three live terminals: the right host, tabs keep shells, reload keeps scrollback, Japanese renders", async ({ page }) => {
  const lab = new LabPage(page);
  await lab.goto("hello-terminal");

  await lab.open("node01");
  await lab.run("hostname");
  await lab.expectLine("node01", /^node01$/);

  await lab.open("controlplane");
  await lab.run("hostname; echo cp-$((20+1))");
  await lab.expectLine("controlplane", /^controlplane$/);
  await lab.expectLine("controlplane", /^cp-21$/);

  // Back to node01: the same shell with its earlier output, and it still works.
  await lab.open("node01");
  await lab.expectLine("node01", /^node01$/);
  await lab.run("echo again-$((2*3))");
  await lab.expectLine("node01", /^again-6$/);

  // Reload: the page reconnects to the same shells and replays their scrollback.
  await page.reload();
  await lab.open("node01");
  await lab.expectLine("node01", /^node01$/);
  await lab.expectLine("node01", /^again-6$/);
  await lab.run("echo after-reload-$((5+5))");
  await lab.expectLine("node01", /^after-reload-10$/);
  await lab.open("controlplane");
  await lab.expectLine("controlplane", /^cp-21$/);

  // Japanese: typed, echoed by the shell, rendered by xterm in the DOM.
  await lab.open("node02");
  await lab.run("echo こんにちは-$((1+1)) 日本語");
  await lab.expectLine("node02", /^こんにちは-2 日本語$/);
  await expect(lab.terminal("node02").locator(".xterm-rows")).toContainText("こんにちは-2");
  await page.screenshot({ path: "test-results/lab-page.png" });
});
