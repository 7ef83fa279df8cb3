import { expect, type Locator, type Page } from "@playwright/test";

/**
 * The replay page (/replay/:sessionId): one tab per recorded machine, asciinema-player, and the
 * step markers as buttons (`data-time` = the marker's second). The view says `data-status`
 * (loading | ready | failed) and `data-position` (the player's time after a jump).
 */
export class ReplayPage {
  constructor(readonly page: Page) {}

  view(): Locator {
    return this.page.getByTestId("replay");
  }

  /** Shows a machine's recording and waits until the player has it. */
  async open(machine: string): Promise<void> {
    await this.page.getByRole("tab", { name: machine }).click();
    await expect(this.view()).toHaveAttribute("data-status", "ready", { timeout: 15_000 });
  }

  marker(label: string): Locator {
    return this.page.getByTestId("replay-marker").filter({ hasText: label });
  }

  /** Jumps to a marker; returns the marker's time and the player's position after the jump (seconds). */
  async jumpTo(label: string): Promise<{ marker: number; position: number }> {
    const marker = this.marker(label);
    const time = Number(await marker.getAttribute("data-time"));
    await marker.click();
    await expect(this.view()).not.toHaveAttribute("data-position", "");
    return { marker: time, position: Number(await this.view().getAttribute("data-position")) };
  }

  screen(): Locator {
    return this.page.locator(".ap-player");
  }
}
