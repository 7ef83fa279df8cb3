/**
 * Several shells per machine, in real Chromium against real sshd hosts: a
 * second shell on node01 works beside the first, comes back after a reload with its shell, and
 * closing it (after a confirm) ends it.
 */
import { expect, test } from "./fixtures";
import { LabPage } from "./pom/LabPage";

test("a second shell on node01 works beside the first, survives a reload, and closes after a confirm", async ({ page }) => {
  const lab = new LabPage(page);
  await lab.goto("hello-terminal");
  await lab.open("node01");
  await lab.run("FIRST=one; echo first-ready");
  await lab.expectLine("node01", /^first-ready$/);

  const second = await lab.openShell("node01");
  expect(second).toBe("node01#2");
  await expect(lab.tab(second)).toHaveText("node01 #2");
  // Its own shell: the first one's variable is not there.
  await lab.run("SECOND=two; echo second-$((1+1))-[$FIRST]");
  await lab.expectLine(second, /^second-2-\[\]$/);
  // Watch one while working in the other: a loop in #2 keeps printing while node01 #1 takes commands.
  await lab.run("for i in 1 2 3 4 5 6 7 8 9 10; do echo tick-$i; sleep 0.3; done");
  await lab.open("node01");
  await lab.run("echo first-still-[$FIRST]-[$SECOND]");
  await lab.expectLine("node01", /^first-still-\[one\]-\[\]$/);
  await lab.expectLine(second, /^tick-10$/);
  expect(await lab.text("node01")).not.toContain("tick-1");

  // A reload: the tab is there again, with the same shell.
  await page.reload();
  await expect(lab.tab(second)).toBeVisible();
  await lab.open(second);
  await lab.run("echo back-[$SECOND]");
  await lab.expectLine(second, /^back-\[two\]$/);

  // Refusing the confirm keeps it; accepting closes it and its shell.
  page.once("dialog", (dialog) => void dialog.dismiss());
  await page.getByTestId(`close-shell-${second}`).click();
  await expect(lab.tab(second)).toBeVisible();
  await lab.closeShell(second);
  await expect(lab.tab("node01")).toHaveAttribute("aria-selected", "true");
  await page.reload();
  await expect(lab.tab("node01")).toBeVisible();
  await expect(lab.tab(second)).toHaveCount(0);
  // A new shell gets a new number, and a fresh shell.
  const third = await lab.openShell("node01");
  expect(third).toBe("node01#3");
  await lab.run("echo fresh-[$SECOND]");
  await lab.expectLine(third, /^fresh-\[\]$/);
});
