import { expect, type Locator, type Page } from "@playwright/test";

/**
 * The lab page: lesson and steps on one side, one terminal tab per machine on the other.
 * Step methods wait on what the page exposes on purpose: `data-state` on each step,
 * `data-outcome` on the check feedback.
 */
export class LabPage {
  constructor(readonly page: Page) {}

  async goto(slug: string): Promise<void> {
    await this.page.goto(`/labs/${slug}`);
  }

  /** A terminal's tab by terminal name: `node01` (the machine's first shell), `node01#2` (an extra one). */
  tab(name: string): Locator {
    return this.page.locator(`[role="tab"][data-terminal="${name}"]`);
  }

  terminal(name: string): Locator {
    return this.page.getByTestId(`terminal-${name}`);
  }

  /** Opens a terminal's tab (`node01`, `node01#2`) and waits until its shell is live (data-status="connected"). */
  async open(machine: string): Promise<void> {
    await this.tab(machine).click();
    await expect(this.terminal(machine)).toHaveAttribute("data-status", "connected", { timeout: 30_000 });
    await this.terminal(machine).locator(".xterm").click();
  }

  /** Types a command line into the focused terminal and presses Enter. */
  async run(command: string): Promise<void> {
    await this.page.keyboard.type(command);
    await this.page.keyboard.press("Enter");
  }

  /** Waits until every machine's shell is live; `timeout` in ms (VM-backed sessions run the lab's setup first). */
  async expectTerminalsConnected(machines: readonly string[], timeout: number): Promise<void> {
    for (const machine of machines) {
      await expect(this.terminal(machine)).toHaveAttribute("data-status", "connected", { timeout });
    }
  }

  /** Waits until every machine's terminal shows a shell prompt (`root@<machine>…# `); `timeout` in ms. */
  async expectPrompts(machines: readonly string[], timeout: number): Promise<void> {
    for (const machine of machines) {
      await expect
        .poll(async () => new RegExp(`root@${machine}[^\n]*[#$] ?$`, "m").test((await this.text(machine)).trimEnd()), { timeout })
        .toBe(true);
    }
  }

  /** What the start-progress panel shows now (data-stage), or null once it is gone. */
  startStage(): Promise<string | null> {
    return this.page
      .getByTestId("start-progress")
      .getAttribute("data-stage", { timeout: 100 })
      .catch(() => null);
  }

  /**
   * Runs a script in a machine's shell the way a learner runs a script they were given: typed
   * into `bash <<'EOF'` … `EOF`, so the script gets its own shell (its `set -e` cannot end the
   * learner's shell) and each line goes through the terminal as keystrokes. The shell then prints
   * `<label> exit=<status>`; read it with `exitStatus`.
   */
  async runScript(machine: string, script: string, label: string): Promise<void> {
    const lines = script.replace(/\n+$/, "").split("\n");
    if (lines.includes("EOF")) throw new Error(`${label}: the script has a line "EOF", which would end the here-document early`);
    if (script.includes("\t")) throw new Error(`${label}: a tab would be completion in an interactive shell`);
    await this.open(machine);
    // Each line after the shell asks for it ("> "), as a person types: typed ahead, the echo
    // lands before the prompt and the screen shows the lines jumbled (the commands still run).
    let prompts = await this.continuationPrompts(machine);
    for (const line of [`bash <<'EOF'; echo "${label} exit=$?"`, ...lines]) {
      await this.run(line);
      prompts++;
      await expect
        .poll(() => this.continuationPrompts(machine), { timeout: 30_000, message: `${label}: the shell's "> " prompt after: ${line}` })
        .toBeGreaterThanOrEqual(prompts);
    }
    await this.run("EOF");
  }

  /** Rows of a machine's terminal that start with the shell's continuation prompt "> ". */
  private async continuationPrompts(machine: string): Promise<number> {
    return (await this.text(machine)).split("\n").filter((row) => row.startsWith("> ") || row === ">").length;
  }

  /** Waits for the line `runScript` prints and returns the script's exit status. */
  async exitStatus(machine: string, label: string, timeout: number): Promise<number> {
    const line = new RegExp(`^${label.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")} exit=(\\d+)$`);
    let status: number | undefined;
    await expect
      .poll(
        async () => {
          for (const l of (await this.text(machine)).split("\n")) {
            const match = line.exec(l.trimEnd());
            if (match) status = Number(match[1]);
          }
          return status;
        },
        { timeout, message: `${label}: the script's exit status on ${machine}` },
      )
      .not.toBeUndefined();
    return status!;
  }

  /** Opens another shell on the active tab's machine ("+"); returns its terminal name once it is live. */
  async openShell(machine: string): Promise<string> {
    await this.open(machine);
    const created = this.page.waitForResponse(
      (r) => r.request().method() === "POST" && /\/api\/sessions\/[^/]+\/tabs$/.test(new URL(r.url()).pathname),
    );
    await this.page.getByTestId("new-shell").click();
    const body = (await (await created).json()) as { machine: string; number: number };
    const name = `${body.machine}#${body.number}`;
    await expect(this.tab(name)).toHaveAttribute("aria-selected", "true");
    await expect(this.terminal(name)).toHaveAttribute("data-status", "connected", { timeout: 30_000 });
    await this.terminal(name).locator(".xterm").click();
    return name;
  }

  /** Closes an extra shell's tab with its "×", accepting the confirm. */
  async closeShell(name: string): Promise<void> {
    this.page.once("dialog", (dialog) => void dialog.accept());
    const closed = this.page.waitForResponse(
      (r) => r.request().method() === "DELETE" && /\/tabs\/[^/]+\/\d+$/.test(new URL(r.url()).pathname),
    );
    await this.page.getByTestId(`close-shell-${name}`).click();
    expect((await closed).status()).toBe(200);
    await expect(this.tab(name)).toHaveCount(0);
  }

  /** Whole buffer text of a machine's terminal, read through xterm's buffer API. */
  text(machine: string): Promise<string> {
    return this.page.evaluate((m) => window.__labdeck?.terminals[m]?.text() ?? "", machine);
  }

  /** Waits until a line of a machine's terminal matches. */
  async expectLine(machine: string, line: RegExp): Promise<void> {
    await expect
      .poll(async () => (await this.text(machine)).split("\n").some((l) => line.test(l.trimEnd())), { timeout: 20_000 })
      .toBe(true);
  }

  /** A step of the step list (locked steps show only their title). */
  step(id: string): Locator {
    return this.page.locator(`li[data-step-id="${id}"]`);
  }

  /** A step's state as the page shows it: "locked" | "current" | "proving" | "done", null before progress loads. */
  stepState(id: string): Promise<string | null> {
    return this.step(id).getAttribute("data-state");
  }

  /** Waits until a step is in a state; `timeout` in ms. */
  async expectStepState(id: string, state: "locked" | "current" | "proving" | "done", timeout?: number): Promise<void> {
    await expect(this.step(id)).toHaveAttribute("data-state", state, timeout === undefined ? {} : { timeout });
  }

  /** The "passed now — reboot to prove it" notice of a verifyByReboot step (data-machine: the machine to reboot). */
  rebootProof(): Locator {
    return this.page.getByTestId("reboot-proof");
  }

  /** Clicks "reboot and verify" and waits until the server accepted the reboot. */
  async rebootAndVerify(): Promise<void> {
    const answered = this.page.waitForResponse(
      (r) => r.request().method() === "POST" && /\/machines\/[^/]+\/reboot$/.test(new URL(r.url()).pathname),
    );
    await this.page.getByTestId("reboot-and-verify").click();
    expect((await answered).status()).toBe(200);
  }

  checkButton(): Locator {
    return this.page.getByRole("button", { name: "チェック", exact: true });
  }

  /** Clicks Check and waits for the check's answer (a check can run for up to its timeout). */
  async check(): Promise<void> {
    const answered = this.page.waitForResponse(
      (r) => r.request().method() === "POST" && /\/api\/sessions\/[^/]+\/check$/.test(new URL(r.url()).pathname),
      { timeout: 30_000 },
    );
    await this.checkButton().click();
    await answered;
    await expect(this.page.getByTestId("check-button")).not.toHaveAttribute("aria-busy", "true");
  }

  /** The last check's result: `data-outcome` is pass | fail | timeout | unreachable | error. */
  feedback(): Locator {
    return this.page.getByTestId("check-feedback");
  }

  /** A step's hint, once revealed. */
  hint(stepId: string): Locator {
    return this.page.getByTestId("hint").and(this.page.locator(`[data-step-id="${stepId}"]`));
  }

  /** Reveals the current step's hint and returns it once shown. */
  async revealHint(): Promise<Locator> {
    const current = this.page.locator('li[data-state="current"]');
    const id = await current.getAttribute("data-step-id");
    if (id === null) throw new Error("no current step");
    await current.getByRole("button", { name: "ヒントを見る" }).click();
    await expect(this.hint(id)).toBeVisible();
    return this.hint(id);
  }

  /**
   * Clicks a code block's "run in <machine>" button, in the given step or else the visible one,
   * after waiting for that machine's shell: the button types into it.
   */
  async runInMachine(machine: string, stepId?: string): Promise<void> {
    await expect(this.terminal(machine)).toHaveAttribute("data-status", "connected", { timeout: 30_000 });
    const scope = stepId === undefined ? this.page.locator("body") : this.step(stepId);
    await scope
      .getByRole("button", { name: `${machine} で実行` })
      .filter({ visible: true })
      .first()
      .click();
  }

  /** The banner shown once every step is done. */
  complete(): Locator {
    return this.page.getByTestId("lab-complete");
  }
}
