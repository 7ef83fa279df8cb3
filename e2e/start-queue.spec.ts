/**
 * Start queue and caps in the browser: an admin caps a lab's sessions on the capacity page; a learner whose
 * start is beyond the cap sees the queue and their place over the terminals (the lesson stays
 * readable), and their lab starts by itself, in the same page, when a session of the lab ends:
 * no error, no reload, no second start.
 */
import { expect, test } from "@playwright/test";
import { adminApi, adminLogin, joinNewCohort, signInNewUser } from "./accounts";
import { LabPage } from "./pom/LabPage";

const LAB = "hello-terminal";
const MACHINES = ["controlplane", "node01", "node02"];

test("a start beyond the lab's cap waits in the queue with its place shown, then begins by itself when room frees", async ({
  browser,
  baseURL,
}) => {
  test.setTimeout(180_000);
  const adminContext = await browser.newContext();
  const admin = await adminContext.newPage();
  await admin.goto("/admin/capacity");
  const login = await adminLogin(Number(new URL(baseURL!).port));
  await admin.getByLabel("メールアドレス").fill(login.email);
  await admin.getByLabel("パスワード").fill(login.password);
  await admin.getByRole("button", { name: "ログイン" }).click();
  await expect(admin).toHaveURL(/\/admin\/capacity$/);

  // The cap leaves exactly one more place (earlier tests' sessions of the lab still run).
  const row = admin.locator(`[data-testid="lab-capacity"] tr[data-lab="${LAB}"]`);
  const live = Number((await row.getByTestId("live").textContent())!.trim());
  const form = row.getByTestId(`pool-target-${LAB}`);
  await form.locator('input[name="cap"]').fill(String(live + 1));
  await form.getByRole("button", { name: "保存" }).click();
  await expect(form).toContainText("保存しました");
  try {
    // Learner A takes the last place.
    const aContext = await browser.newContext();
    const aEmail = await signInNewUser(aContext, baseURL!);
    const aCohort = await joinNewCohort(baseURL!, aEmail, [LAB]);
    const a = new LabPage(await aContext.newPage());
    await a.goto(LAB);
    await a.expectTerminalsConnected(MACHINES, 60_000);

    // Learner B waits in line, seeing where they are; the lesson is there meanwhile.
    const bContext = await browser.newContext();
    await signInNewUser(bContext, baseURL!);
    const bPage = await bContext.newPage();
    const b = new LabPage(bPage);
    await b.goto(LAB);
    const progress = bPage.getByTestId("start-progress");
    await expect(progress).toHaveAttribute("data-stage", "queued", { timeout: 30_000 });
    await expect(bPage.getByTestId("queue-position")).toContainText("1 番目");
    await expect(bPage.getByRole("article").first()).toBeVisible();
    await expect(
      row
        .page()
        .reload()
        .then(() => row.getByTestId("queued").textContent()),
    ).resolves.toMatch(/^\s*1\s*$/);

    // Room frees: A's cohort ends, and with it A's session. B's page carries on by itself.
    const api = await adminApi(baseURL!);
    expect((await api.post(`/api/cohorts/${aCohort}/end`)).ok()).toBe(true);
    await b.expectTerminalsConnected(MACHINES, 60_000);
    await expect(progress).toHaveCount(0);
    await b.open("controlplane");
    await b.run("echo queued-$((40+2))");
    await b.expectLine("controlplane", /^queued-42$/);
  } finally {
    const api = await adminApi(baseURL!);
    await api.delete(`/api/pool-targets/${LAB}`);
  }
});
