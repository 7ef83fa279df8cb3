/**
 * Web preview, in real Chromium: a learner serves HTTP on node01 and node02
 * (`python3 -m http.server`, typed into the lab's terminals) and opens both through the platform,
 * on their own preview origins (`*.preview.localhost`, loopback); another learner gets 403 for
 * that URL and 404 for the entry; the served page cannot read Labdeck's sign-in cookie, nor
 * Labdeck's API, nor stop later previews in the browser with cookies set on the parent domain.
 */
import { expect, test } from "./fixtures";
import { signInNewUser } from "./accounts";
import { LabPage } from "./pom/LabPage";

const PORT = 8000;

test("a learner opens node01's and node02's web pages through the platform; another learner cannot; the page cannot read Labdeck's cookie", async ({
  page,
  context,
  baseURL,
  browser,
}) => {
  const lab = new LabPage(page);
  await lab.goto("hello-terminal");
  for (const machine of ["node01", "node02"]) {
    await lab.open(machine);
    await lab.run(
      `cd "$(mktemp -d)" && echo '<title>${machine}</title><p id=who>served by ${machine}</p>' > index.html; python3 -m http.server ${PORT} --bind 127.0.0.1 >/dev/null 2>&1 & sleep 1; echo started-${machine}`,
    );
    await lab.expectLine(machine, new RegExp(`^started-${machine}$`));
  }
  try {
    // The tab bar's "Web preview" asks for the port and opens a new tab.
    await lab.open("node01");
    page.once("dialog", (dialog) => void dialog.accept(String(PORT)));
    const opened = context.waitForEvent("page");
    await page.getByTestId("open-preview").click();
    const preview = await opened;
    await preview.waitForLoadState();
    // python may take a moment to listen: the preview says so (502) until it does.
    await expect(async () => {
      if ((await preview.locator("#who").count()) === 0) await preview.reload();
      await expect(preview.locator("#who")).toHaveText("served by node01", { timeout: 1_000 });
    }).toPass({ timeout: 20_000 });
    const url = new URL(preview.url());
    expect(url.hostname).toMatch(new RegExp(`^${PORT}-node01-[a-z0-9]+\\.preview\\.localhost$`));
    expect(url.pathname).toBe("/");
    const sessionId = url.hostname.split(".")[0]!.split("-").at(-1)!;

    // The lab's page: no Labdeck cookie in document.cookie (the grant is HttpOnly too), none in
    // what the browser would send it, and Labdeck's API is another origin it cannot read.
    expect(await preview.evaluate(() => document.cookie)).toBe("");
    const sent = await context.cookies(preview.url());
    expect(sent.map((c) => c.name)).not.toContain("labdeck.session_token");
    expect(sent.find((c) => c.name === "labdeck-preview")).toMatchObject({ httpOnly: true, sameSite: "Lax" });
    expect((await context.cookies(baseURL!)).map((c) => c.name)).toContain("labdeck.session_token");
    const apiRead = await preview.evaluate(async (api) => {
      try {
        const res = await fetch(`${api}/api/sessions/${location.hostname.split(".")[0]!.split("-").at(-1)}/progress`, {
          credentials: "include",
        });
        return `read ${res.status}`;
      } catch {
        return "blocked";
      }
    }, baseURL!);
    expect(apiRead).toBe("blocked");

    // The page (as one served from the machine could) tosses cookies onto the parent preview
    // domain: a forged grant and a cookie bomb of 12 x 3.8 KB, which Chromium keeps and sends to
    // every preview origin. Previews in this browser still open: not 403 (the forged grant), not
    // 431 (the bomb); the forged grant is cleared on the parent domain.
    const parent = url.hostname.split(".").slice(1).join(".");
    await preview.evaluate((domain) => {
      document.cookie = `labdeck-preview=forged; Domain=${domain}; Path=/`;
      for (let i = 0; i < 12; i++) document.cookie = `bomb${i}=${"x".repeat(3800)}; Domain=${domain}; Path=/`;
    }, parent);
    const tossed = await context.cookies(`http://${PORT}-node02-${sessionId}.${parent}/`);
    expect(tossed.filter((c) => c.name.startsWith("bomb")).length).toBe(12);
    expect(tossed.some((c) => c.name === "labdeck-preview" && c.value === "forged")).toBe(true);
    const again = await preview.reload();
    expect(again?.status()).toBe(200);
    await expect(preview.locator("#who")).toHaveText("served by node01");
    expect((await context.cookies(preview.url())).some((c) => c.value === "forged")).toBe(false);

    // node02 by the entry URL (what a lesson link opens), with the bomb still in the browser.
    const second = await context.newPage();
    const opened02 = await second.goto(`/api/labs/hello-terminal/preview?machine=node02&port=${PORT}&path=/`);
    expect(opened02?.status()).toBe(200);
    await expect(second.locator("#who")).toHaveText("served by node02");
    expect(new URL(second.url()).hostname).toBe(`${PORT}-node02-${sessionId}.preview.localhost`);
    await second.close();

    // Another learner: the same preview URL is 403, the owner's entry 404.
    const otherContext = await browser.newContext({ baseURL });
    try {
      await signInNewUser(otherContext, baseURL!, "learner");
      const other = await otherContext.newPage();
      const denied = await other.goto(preview.url());
      expect(denied?.status()).toBe(403);
      await expect(other.locator("body")).not.toContainText("served by node01");
      const entry = await other.goto(`/api/sessions/${sessionId}/preview?machine=node01&port=${PORT}`);
      expect(entry?.status()).toBe(404);
    } finally {
      await otherContext.close();
    }
    await preview.close();
  } finally {
    for (const machine of ["node02", "node01"]) {
      await lab.open(machine);
      await lab.run("kill %1; echo stopped");
    }
  }
});
