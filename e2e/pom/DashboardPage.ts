/**
 * The instructor dashboard: one row per learner (`data-learner` = email) with `data-steps-done`
 * and `data-current-step`; the grid updates live (`data-live="true"` once the event stream is open).
 */
import { expect, type Locator, type Page } from "@playwright/test";

export class DashboardPage {
  constructor(readonly page: Page) {}

  async goto(cohortId: string): Promise<void> {
    await this.page.goto(`/cohorts/${cohortId}`);
    await expect(this.page.getByTestId("dashboard")).toHaveAttribute("data-live", "true");
  }

  row(email: string): Locator {
    return this.page.locator(`tr[data-learner="${email}"]`);
  }

  async expectProgress(email: string, stepsDone: number, currentStep: string, timeout?: number): Promise<void> {
    await expect(this.row(email)).toHaveAttribute("data-steps-done", String(stepsDone), timeout === undefined ? {} : { timeout });
    await expect(this.row(email)).toHaveAttribute("data-current-step", currentStep);
  }
}
