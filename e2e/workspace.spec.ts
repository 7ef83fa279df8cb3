/**
 * The workspace a CKA learner expects, in real Chromium against real sshd hosts:
 * exam-style copy and paste, a long paste that asks first, and Japanese IME composition.
 */
import type { Page } from "@playwright/test";
import { expect, test } from "./fixtures";
import { LabPage } from "./pom/LabPage";

test.beforeEach(async ({ context, baseURL, page }) => {
  await context.grantPermissions(["clipboard-read", "clipboard-write"], { origin: baseURL });
  page.on("console", (message) => message.type() === "warning" && console.log(`page: ${message.text()}`));
});

const clipboard = {
  read: (page: Page) => page.evaluate(() => navigator.clipboard.readText()),
  write: (page: Page, text: string) => page.evaluate((t) => navigator.clipboard.writeText(t), text),
};

/** How many rows of a machine's terminal read exactly `line`. */
async function rowsEqual(lab: LabPage, machine: string, line: string): Promise<number> {
  return (await lab.text(machine)).split("\n").filter((l) => l.trimEnd() === line).length;
}

test("Ctrl+Shift+C copies the selected output; Ctrl+Shift+V and a right click paste it into another tab's shell", async ({ page }) => {
  const lab = new LabPage(page);
  await lab.goto("hello-terminal");
  await lab.open("controlplane");
  await lab.run("echo COPY-ME-$((6*7))");
  await lab.expectLine("controlplane", /^COPY-ME-42$/);
  // Select the output word as a learner would (a double click), then the exam's copy key.
  const row = await lab
    .terminal("controlplane")
    .locator(".xterm-rows > div", { hasText: /^COPY-ME-42\s*$/ })
    .boundingBox();
  if (!row) throw new Error("the output row is not on screen");
  // The click goes to xterm's screen layer above the rows, as a learner's does.
  await page.mouse.dblclick(row.x + 20, row.y + row.height / 2);
  await page.keyboard.press("Control+Shift+C");
  await expect.poll(() => clipboard.read(page)).toBe("COPY-ME-42");

  await lab.open("node01");
  await page.keyboard.type("echo pasted:");
  await page.keyboard.press("Control+Shift+V");
  await page.keyboard.press("Enter");
  await lab.expectLine("node01", /^pasted:COPY-ME-42$/);

  await page.keyboard.type("echo right:");
  await lab.terminal("node01").locator(".xterm-screen").click({ button: "right" });
  await page.keyboard.press("Enter");
  await lab.expectLine("node01", /^right:COPY-ME-42$/);
  // Ctrl+Shift+C did not reach the shell as ^C, nor Ctrl+Shift+V as ^V.
  expect(await lab.text("node01")).not.toMatch(/\^C|\^V/);
});

test("a pasted multi-line script waits for Enter (bracketed paste) and runs once; a long paste asks first and types nothing when refused", async ({
  page,
}) => {
  const lab = new LabPage(page);
  await lab.goto("hello-terminal");
  await lab.open("node02");
  await clipboard.write(page, "echo one-$((0+1))\necho two-$((1+1))\necho three-$((2+1))\n");
  await page.keyboard.press("Control+Shift+V");
  // Bash asked for bracketed paste: the lines wait in the prompt, as in any terminal, until Enter.
  await expect.poll(async () => (await lab.text("node02")).includes("echo three-$((2+1))")).toBe(true);
  expect(await rowsEqual(lab, "node02", "three-3")).toBe(0);
  await page.keyboard.press("Enter");
  await lab.expectLine("node02", /^three-3$/);
  for (const line of ["one-1", "two-2", "three-3"]) expect(await rowsEqual(lab, "node02", line), line).toBe(1);

  // Seven lines: the page asks; refused, nothing is typed.
  const long = Array.from({ length: 7 }, (_, i) => `echo long-${i}-$((${i}*10))`).join("\n") + "\n";
  await clipboard.write(page, long);
  const refused = page.waitForEvent("dialog").then(async (dialog) => {
    expect(dialog.message()).toContain("7");
    await dialog.dismiss();
  });
  await page.keyboard.press("Control+Shift+V");
  await refused;
  await lab.run("echo after-refusal");
  await lab.expectLine("node02", /^after-refusal$/);
  expect(await rowsEqual(lab, "node02", "long-0-0")).toBe(0);

  // Accepted: every line runs once.
  page.once("dialog", (dialog) => void dialog.accept());
  await page.keyboard.press("Control+Shift+V");
  await expect.poll(async () => (await lab.text("node02")).includes("echo long-6-$((6*10))")).toBe(true);
  await page.keyboard.press("Enter");
  await lab.expectLine("node02", /^long-6-60$/);
  for (let i = 0; i < 7; i++) expect(await rowsEqual(lab, "node02", `long-${i}-${i * 10}`), `line ${i}`).toBe(1);
});

test("Japanese typed through an IME (composition, then commit) arrives once", async ({ page }) => {
  const lab = new LabPage(page);
  await lab.goto("hello-terminal");
  await lab.open("controlplane");
  await page.keyboard.type("echo ime:");
  // What an IME does: composition updates (kana), then the committed text (CDP, as Chromium's IME path).
  const cdp = await page.context().newCDPSession(page);
  for (const kana of ["に", "にほ", "にほん", "にほんご"])
    await cdp.send("Input.imeSetComposition", { text: kana, selectionStart: kana.length, selectionEnd: kana.length });
  await cdp.send("Input.insertText", { text: "日本語" });
  await page.keyboard.type("-end");
  await page.keyboard.press("Enter");
  await lab.expectLine("controlplane", /^ime:日本語-end$/);
  expect(await rowsEqual(lab, "controlplane", "ime:日本語-end")).toBe(1);
});
