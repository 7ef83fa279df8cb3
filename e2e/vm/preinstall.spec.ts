/**
 * A learner completes `preinstall-checks` end to end in the browser, on real QEMU VMs
 * (swap, kernel modules and sysctl need real kernels). For each step the learner types the step's
 * solution into its machine's terminal and sees the step turn done and the next one current,
 * from the grader's background checks alone (no Check click). A step marked verifyByReboot first
 * shows "passed now — reboot to prove it" and turns done only after its machine really rebooted:
 * the first such step is rebooted from the terminal (`reboot`), the next with the page's "reboot
 * and verify" button.
 */
import path from "node:path";
import { expect } from "@playwright/test";
import { loadLab } from "../../server/labs/load";
import { LabPage } from "../pom/LabPage";
import { test } from "./fixtures";

const SLUG = "preinstall-checks";
/**
 * Page load to every terminal's prompt, in ms: the session takes the set the pool prepared for
 * the lab (its setup done), so this is the terminals' connect and login under TCG; the limit
 * leaves room for a cold start should the prepared set be gone (a busy host).
 */
const CONNECT_TIMEOUT_MS = 180_000;
/** Typing a solution to its exit status: the keystrokes, then the script under TCG. */
const SOLUTION_TIMEOUT_MS = 60_000;
/** A solution done to the step shown done: the grader polls every ~2 s (and on Enter); a check under TCG takes 1-3 s; room for a busy host. */
const UNLOCK_TIMEOUT_MS = 90_000;
/** A reboot to the step shown done: a TCG boot (50-100 s on a busy host) plus the grader's next poll. */
const REBOOT_PROOF_TIMEOUT_MS = 240_000;
/** The whole walk: connect plus seven steps and two reboots at their limits. */
const TEST_TIMEOUT_MS = CONNECT_TIMEOUT_MS + 7 * (SOLUTION_TIMEOUT_MS + UNLOCK_TIMEOUT_MS) + 2 * REBOOT_PROOF_TIMEOUT_MS;
/** Where the README's picture of the lab page comes from. */
const SCREENSHOT = "docs/screenshots/lab-page.png";

test("a learner types each step's solution into the terminal and every step of preinstall-checks unlocks", async ({
  page,
  vmServer,
}, testInfo) => {
  test.setTimeout(TEST_TIMEOUT_MS);
  const lab = await loadLab(path.resolve("labs"), SLUG);
  const learner = new LabPage(page);
  const timings: string[] = [
    `server start to warm pool ready: ${vmServer.timings.poolReadyMs} ms (listening after ${vmServer.timings.listeningMs} ms)`,
  ];

  const loadStarted = Date.now();
  await learner.goto(SLUG);
  await learner.expectTerminalsConnected(lab.manifest.machines, CONNECT_TIMEOUT_MS);
  const connectedMs = Date.now() - loadStarted;
  await learner.expectPrompts(lab.manifest.machines, CONNECT_TIMEOUT_MS);
  timings.push(
    `click to ${lab.manifest.machines.length} prompts: ${Date.now() - loadStarted} ms (terminals connected after ${connectedMs} ms)`,
  );
  const [first] = lab.steps;
  if (!first) throw new Error(`${SLUG} has no steps`);
  await learner.expectStepState(first.id, "current");

  let reboots = 0;
  try {
    for (const [index, step] of lab.steps.entries()) {
      const next = lab.steps[index + 1];
      await learner.expectStepState(step.id, "current");
      if (next) await learner.expectStepState(next.id, "locked");
      const started = Date.now();
      await learner.runScript(step.machine, step.solution.content, step.id);
      expect(await learner.exitStatus(step.machine, step.id, SOLUTION_TIMEOUT_MS), `${step.solution.file} exit status`).toBe(0);
      const solved = Date.now();
      if (step.verifyByReboot) {
        // Passed now, not done: the next step stays locked until the machine proved it after a reboot.
        await learner.expectStepState(step.id, "proving", UNLOCK_TIMEOUT_MS);
        await expect(learner.rebootProof()).toHaveAttribute("data-machine", step.machine);
        if (next) await learner.expectStepState(next.id, "locked");
        const passedNow = Date.now();
        if (reboots++ === 0) {
          await learner.open(step.machine);
          await learner.run("reboot");
        } else await learner.rebootAndVerify();
        await learner.expectStepState(step.id, "done", REBOOT_PROOF_TIMEOUT_MS);
        timings.push(
          `step ${index + 1} ${step.id}: typed and ran in ${solved - started} ms, passed now ${passedNow - solved} ms later, ` +
            `reboot (${reboots === 1 ? "terminal" : "button"}) to done ${Date.now() - passedNow} ms`,
        );
        // The terminal comes back in a fresh shell on the new boot before the next step types into it.
        await expect(learner.terminal(step.machine)).toHaveAttribute("data-status", "connected", { timeout: REBOOT_PROOF_TIMEOUT_MS });
      } else {
        await learner.expectStepState(step.id, "done", UNLOCK_TIMEOUT_MS);
        timings.push(`step ${index + 1} ${step.id}: typed and ran in ${solved - started} ms, shown done ${Date.now() - solved} ms later`);
      }
      if (next) await learner.expectStepState(next.id, "current");
    }
  } finally {
    // What the learner saw, for a failure: each machine's terminal and the last check's message.
    for (const machine of lab.manifest.machines) {
      await testInfo.attach(`terminal-${machine}.txt`, { body: await learner.text(machine), contentType: "text/plain" });
    }
    await testInfo.attach("timings.txt", { body: timings.join("\n"), contentType: "text/plain" });
    console.log(timings.map((t) => `  ${t}`).join("\n"));
  }

  await expect(learner.complete()).toBeVisible();
  for (const step of lab.steps) await learner.expectStepState(step.id, "done");
  await page.screenshot({ path: SCREENSHOT });
});
