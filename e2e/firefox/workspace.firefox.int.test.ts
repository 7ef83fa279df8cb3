/**
 * Exam-style copy and paste in Firefox, the
 * same acts as e2e/workspace.spec.ts does in Chromium: Ctrl+Shift+C copies the selection,
 * Ctrl+Shift+V and a right click paste it into another tab's shell, a multi-line paste waits for
 * Enter (bracketed paste) and runs once, a long paste asks first.
 *
 * The browser is Debian's firefox-esr, driven over WebDriver BiDi by puppeteer-core: Playwright's
 * Firefox is a patched build it downloads from its own CDN (unreachable here), and its BiDi
 * channel asks Firefox ESR for a command it does not have (emulation.setMediaFeaturesOverride).
 * The real app (e2e/serve.ts on its own subnet: netns sshd hosts, embedded PostgreSQL, the
 * production server; run `next build` first), real shells. Firefox asks the user with a "Paste"
 * button before a page reads the clipboard; the test turns that prompt off with Firefox's testing
 * pref, as the Chromium spec grants the clipboard permission.
 *
 * IME composition is tested in Chromium only (e2e/workspace.spec.ts): BiDi has no IME input.
 *
 *   npx vitest run e2e/firefox
 */
import type { Browser, Page } from "puppeteer-core";
import puppeteer from "puppeteer-core";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { joinNewCohort, newUserCookies } from "../accounts";
import { serveChild, type ServedApp } from "../serve-child";

export const FIREFOX_PATH = process.env.FIREFOX_PATH ?? "/usr/bin/firefox-esr";
/** 10.213.62.0/24: beside Playwright's e2e hosts (60) and every unit test's. */
const SUBNET = 62;
const SLUG = "hello-terminal";

let app: ServedApp;
let browser: Browser;
let page: Page;
let baseURL: string;

beforeAll(async () => {
  app = await serveChild({ subnet: SUBNET, env: { LOG_LEVEL: "warn" } });
  ({ baseURL } = app);
  const { email, cookies } = await newUserCookies(baseURL);
  await joinNewCohort(baseURL, email, [SLUG]);
  browser = await puppeteer.launch({
    browser: "firefox",
    executablePath: FIREFOX_PATH,
    headless: true,
    extraPrefsFirefox: { "dom.events.testing.asyncClipboard": true },
  });
  page = await browser.newPage();
  await page.setViewport({ width: 1400, height: 900 });
  await browser.setCookie(...cookies.map((c) => ({ ...c, domain: "127.0.0.1", path: "/" })));
  await page.goto(`${baseURL}/labs/${SLUG}`);
}, 300_000);

afterAll(async () => {
  await browser?.close();
  await app?.stop();
}, 60_000);

/** Reads until `ok` holds (every 100 ms, for `timeoutMs` at most: a safety bound); resolves with the value. */
async function poll<T>(what: string, read: () => Promise<T>, ok: (value: T) => boolean, timeoutMs = 20_000): Promise<T> {
  let value: T | undefined;
  await vi.waitFor(
    async () => {
      value = await read();
      if (!ok(value)) throw new Error(`${what}: still ${JSON.stringify(value)} after ${timeoutMs} ms`);
    },
    { timeout: timeoutMs, interval: 100 },
  );
  return value as T;
}

/** The terminal's whole buffer as text (the page's handle, components/terminal/terminal-registry.ts). */
const text = (machine: string) => page.evaluate((m) => window.__labdeck?.terminals[m]?.text() ?? "", machine);
const rowsEqual = async (machine: string, line: string) => (await text(machine)).split("\n").filter((l) => l.trimEnd() === line).length;
const expectLine = (machine: string, line: string) =>
  poll(
    `"${line}" on ${machine}`,
    () => rowsEqual(machine, line),
    (n) => n > 0,
  );

/** Opens a terminal's tab and waits until its shell is live, then focuses it with a click. */
async function open(machine: string): Promise<void> {
  // Clicked again until selected: a click before React hydrated the page does nothing (Playwright's
  // locators retry this by themselves; puppeteer clicks once, where the element is).
  const tab = `[role="tab"][data-terminal="${machine}"]`;
  await poll(
    `the ${machine} tab selected`,
    async () => {
      await page.click(tab);
      // Selected by this click, or clicked again (the wait only bounds one try).
      return page
        .waitForSelector(`${tab}[aria-selected="true"]`, { timeout: 1_000 })
        .then(() => "true")
        .catch(() => "false");
    },
    (selected) => selected === "true",
  );
  await page.waitForSelector(`[data-testid="terminal-${machine}"][data-status="connected"]`, { timeout: 60_000 });
  await poll(
    `a prompt on ${machine}`,
    () => text(machine),
    (t) => /[#$] ?$/.test(t.trimEnd()),
    30_000,
  );
  await page.click(`[data-testid="terminal-${machine}"] .xterm`);
}

async function chord(key: "KeyC" | "KeyV"): Promise<void> {
  await page.keyboard.down("Control");
  await page.keyboard.down("Shift");
  await page.keyboard.press(key);
  await page.keyboard.up("Shift");
  await page.keyboard.up("Control");
}

const clipboard = {
  read: () => page.evaluate(() => navigator.clipboard.readText()),
  write: (value: string) => page.evaluate((v) => navigator.clipboard.writeText(v), value),
};

describe("copy and paste in Firefox (firefox-esr over WebDriver BiDi)", () => {
  it("Ctrl+Shift+C copies the selected output; Ctrl+Shift+V and a right click paste it into another tab's shell", async () => {
    await open("controlplane");
    await page.keyboard.type("echo COPY-ME-$((6*7))\n");
    await expectLine("controlplane", "COPY-ME-42");
    // Select the output word as a learner would (a double click on its row), then the exam's copy key.
    const rows = await page.$$(`[data-testid="terminal-controlplane"] .xterm-rows > div`);
    let box: { x: number; y: number; width: number; height: number } | null = null;
    for (const row of rows) if ((await row.evaluate((e) => e.textContent ?? "")).trim() === "COPY-ME-42") box = await row.boundingBox();
    if (!box) throw new Error("the output row is not on screen");
    await page.mouse.click(box.x + 20, box.y + box.height / 2, { count: 2 });
    await chord("KeyC");
    await poll("the clipboard", clipboard.read, (t) => t === "COPY-ME-42");

    await open("node01");
    await page.keyboard.type("echo pasted:");
    await chord("KeyV");
    await page.keyboard.press("Enter");
    await expectLine("node01", "pasted:COPY-ME-42");

    await page.keyboard.type("echo right:");
    const screen = (await (await page.$(`[data-testid="terminal-node01"] .xterm-screen`))!.boundingBox())!;
    await page.mouse.click(screen.x + screen.width / 2, screen.y + screen.height / 2, { button: "right" });
    await page.keyboard.press("Enter");
    await expectLine("node01", "right:COPY-ME-42");
    // Ctrl+Shift+C did not reach the shell as ^C, nor Ctrl+Shift+V as ^V.
    expect(await text("node01")).not.toMatch(/\^C|\^V/);
  }, 120_000);

  it("a pasted multi-line script waits for Enter (bracketed paste) and runs once; a long paste asks first and types nothing when refused", async () => {
    await open("node02");
    await clipboard.write("echo one-$((0+1))\necho two-$((1+1))\necho three-$((2+1))\n");
    await chord("KeyV");
    await poll(
      "the pasted lines at the prompt",
      () => text("node02"),
      (t) => t.includes("echo three-$((2+1))"),
    );
    expect(await rowsEqual("node02", "three-3")).toBe(0);
    await page.keyboard.press("Enter");
    await expectLine("node02", "three-3");
    for (const line of ["one-1", "two-2", "three-3"]) expect(await rowsEqual("node02", line), line).toBe(1);

    // Seven lines: the page asks; refused, nothing is typed.
    await clipboard.write(Array.from({ length: 7 }, (_, i) => `echo long-${i}-$((${i}*10))`).join("\n") + "\n");
    // Resolved once the dialog is gone: keys sent while it is still up go nowhere.
    const refused = new Promise<string>((resolve, reject) =>
      page.once("dialog", (dialog) => void dialog.dismiss().then(() => resolve(dialog.message()), reject)),
    );
    await chord("KeyV");
    expect(await refused).toContain("7");
    await page.keyboard.type("echo after-refusal\n");
    await expectLine("node02", "after-refusal");
    expect(await rowsEqual("node02", "long-0-0")).toBe(0);

    // Accepted: every line runs once.
    const accepted = new Promise<void>((resolve, reject) => page.once("dialog", (dialog) => void dialog.accept().then(resolve, reject)));
    await chord("KeyV");
    await accepted;
    await poll(
      "the long paste at the prompt",
      () => text("node02"),
      (t) => t.includes("echo long-6-$((6*10))"),
    );
    await page.keyboard.press("Enter");
    await expectLine("node02", "long-6-60");
    for (let i = 0; i < 7; i++) expect(await rowsEqual("node02", `long-${i}-${i * 10}`), `line ${i}`).toBe(1);
  }, 120_000);
});
