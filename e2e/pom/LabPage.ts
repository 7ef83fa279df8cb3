import { expect, type Locator, type Page } from "@playwright/test";

/** The lab page: lesson on one side, one terminal tab per machine on the other. */
export class LabPage {
  constructor(readonly page: Page) {}

  async goto(slug: string): Promise<void> {
    await this.page.goto(`/labs/${slug}`);
  }

  tab(machine: string): Locator {
    return this.page.getByRole("tab", { name: machine });
  }

  terminal(machine: string): Locator {
    return this.page.getByTestId(`terminal-${machine}`);
  }

  /** Opens a machine's tab and waits until its shell is live (data-status="connected"). */
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
}
