/**
 * Restarts that cost a learner nothing, in Chromium on real QEMU VMs (TCG):
 *   - the set prepared for the lab survives a clean stop (SIGINT) and a crash (SIGKILL) of the
 *     server: after each start it is offered again, and the next learner gets it with nothing
 *     booted or restored in between;
 *   - a machine reset from the page ends with its terminal on the machine's holder (not a direct
 *     shell), so after `kill -9` of the server and a new start the page's node01 terminal is in the
 *     same shell as after the reset (a variable set after the reset is still set), and so is the
 *     untouched controlplane's.
 * Figures (restart to listening, listening to each terminal echoing, reset to a usable prompt) are
 * printed; the limits here only catch a broken path, the figures live in bench/README.md.
 */
import path from "node:path";
import { expect } from "@playwright/test";
import { loadLab } from "../../server/labs/load";
import { LabPage } from "../pom/LabPage";
import { test } from "./fixtures";
import { machineEndpointOf, rawSshLogin } from "./raw-ssh";

const SLUG = "preinstall-checks";
/** Page load to every prompt on a kept prepared set, ms (seconds expected; room for a busy TCG host). */
const CONNECT_TIMEOUT_MS = 120_000;
/** A restarted server's pool offering its kept set, ms (the pool role is taken right after start). */
const POOL_KEPT_TIMEOUT_MS = 60_000;
/** The reset's API answer and the terminal's prompt after it, ms (a restore from the saved state under TCG). */
const RESET_TIMEOUT_MS = 180_000;
/** New server listening to a terminal echoing again in its old shell, ms (the promise is 5 s; room for CI). */
const BACK_TIMEOUT_MS = 60_000;
const TEST_TIMEOUT_MS = 3 * 120_000 + 2 * POOL_KEPT_TIMEOUT_MS + CONNECT_TIMEOUT_MS + RESET_TIMEOUT_MS + 2 * BACK_TIMEOUT_MS;
/** The line a terminal shows when it falls back to a direct shell (messages/*.json terminal.notice.fallback). */
const DIRECT_SHELL = /端末ホルダーがないため|no terminal holder/;

test("a prepared set survives a clean stop and a crash; a reset machine's shell survives kill -9 of the server", async ({
  page,
  vmServer,
}) => {
  test.setTimeout(TEST_TIMEOUT_MS);
  const lab = await loadLab(path.resolve("labs"), SLUG);
  const machines = lab.manifest.machines;
  const learner = new LabPage(page);
  const timings: string[] = [];
  const logged = (msg: string) => vmServer.logLines().some((line) => line.msg === msg);

  for (const signal of ["SIGINT", "SIGKILL"] as const) {
    const { listeningMs } = await vmServer.restart(signal);
    await expect.poll(() => logged("warm pool: ready sets kept from before"), { timeout: POOL_KEPT_TIMEOUT_MS }).toBe(true);
    timings.push(`${signal === "SIGINT" ? "clean stop" : "kill -9"}, start again: listening after ${listeningMs} ms, prepared set kept`);
  }
  expect(logged("qemu provider: removing leftovers of an earlier run")).toBe(false);

  const clicked = Date.now();
  await learner.goto(SLUG);
  await learner.expectPrompts(machines, CONNECT_TIMEOUT_MS);
  timings.push(`click to ${machines.length} prompts on the kept set: ${Date.now() - clicked} ms`);
  expect(logged("prepared machines handed out from the warm pool")).toBe(true);
  // Nothing was booted or restored for it since the start.
  expect(logged("warm pool prepared set ready")).toBe(false);

  // Reset node01 from the page: the terminal comes back on the machine's holder.
  await learner.open("node01");
  page.once("dialog", (dialog) => void dialog.accept());
  const resetStarted = Date.now();
  const answered = page.waitForResponse((r) => r.url().endsWith("/machines/node01/reset") && r.request().method() === "POST", {
    timeout: RESET_TIMEOUT_MS,
  });
  await page.getByTestId("reset-machine").click();
  expect((await answered).status()).toBe(200);
  const resetAnsweredMs = Date.now() - resetStarted;
  await learner.open("node01");
  await learner.run("Z=kept-$((6*7)); echo set-$Z");
  await learner.expectLine("node01", /^set-kept-42$/);
  // The hand-out started the pool's refill (the next prepared set, restored from the template):
  // say whether it ran beside the reset.
  const refilled = vmServer.logLines().find((line) => line.msg === "warm pool prepared set ready");
  const refill = refilled
    ? `the pool's refill was ready ${Number(refilled.time) - resetStarted} ms after the reset began`
    : "the pool's refill still running";
  timings.push(
    `reset node01: API answered after ${resetAnsweredMs} ms, typing in the new shell after ${Date.now() - resetStarted} ms (${refill})`,
  );
  expect(await learner.text("node01")).not.toMatch(DIRECT_SHELL);
  await learner.open("controlplane");
  await learner.run("Y=still-$((6*7)); echo set-$Y");
  await learner.expectLine("controlplane", /^set-still-42$/);

  // kill -9 of the server and a new start: both terminals continue their shells. The same-run
  // baseline: a raw SSH login into controlplane (connect, key exchange, auth, one exec) started
  // the moment the new process listens, beside the page's reconnects: the floor of any path
  // that logs in again after a restart.
  // The baseline is a figure, not a check: when it cannot be taken, the line says why.
  const endpoint = await machineEndpointOf(vmServer, "controlplane").catch((error: Error) => error);
  // Every terminal of the page, watched side by side: when it has lost the killed server and when
  // it says connected again (its shell's link is up), whether or not its tab is shown.
  const reconnected = machines.map(async (machine) => {
    await expect(learner.terminal(machine)).not.toHaveAttribute("data-status", "connected", { timeout: BACK_TIMEOUT_MS });
    await expect(learner.terminal(machine)).toHaveAttribute("data-status", "connected", { timeout: 2 * BACK_TIMEOUT_MS });
    return Date.now();
  });
  const { listeningMs, listeningAt } = await vmServer.restart("SIGKILL");
  const rawLogin =
    endpoint instanceof Error
      ? Promise.resolve(`unavailable (${endpoint.message})`)
      : rawSshLogin(endpoint).then(String, (error: Error) => `failed (${error.message})`);
  await learner.run("echo back-$Y");
  await expect.poll(async () => /^back-still-42$/m.test(await learner.text("controlplane")), { timeout: BACK_TIMEOUT_MS }).toBe(true);
  const controlplaneBack = Date.now() - listeningAt;
  await learner.open("node01");
  await learner.run("echo back-$Z");
  await expect.poll(async () => /^back-kept-42$/m.test(await learner.text("node01")), { timeout: BACK_TIMEOUT_MS }).toBe(true);
  timings.push(
    `kill -9 with the page open: listening after ${listeningMs} ms; controlplane echoing in its old shell ${controlplaneBack} ms after listening, ` +
      `node01 (reset before) ${Date.now() - listeningAt} ms; baseline: a raw SSH login into controlplane started at listening took ${await rawLogin} ms`,
  );
  const connectedAt = await Promise.all(reconnected);
  const after = connectedAt.map((at) => at - listeningAt);
  timings.push(
    `terminals connected again after listening: ${machines.map((m, i) => `${m} ${after[i]} ms`).join(", ")}; ` +
      `p50 ${[...after].sort((a, b) => a - b)[Math.floor(after.length / 2)]} ms, max ${Math.max(...after)} ms`,
  );
  console.log(timings.map((t) => `  ${t}`).join("\n"));
});
