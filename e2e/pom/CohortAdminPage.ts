/**
 * The admin's page of one cohort (/admin/cohorts/:id): members (`tr[data-email]` in `members`,
 * each with a remove button), open invitations (`pending`, rows with link, copy and revoke), the
 * "add by email" form (`invite-form`, result in `add-result[data-outcome]`) and the CSV import
 * (`csv-form`, report with `data-count`s and problems by `data-line`).
 */
import { expect, type Locator, type Page } from "@playwright/test";

export class CohortAdminPage {
  constructor(readonly page: Page) {}

  async goto(cohortId: string): Promise<void> {
    await this.page.goto(`/admin/cohorts/${cohortId}`);
    await expect(this.page.getByTestId("cohort-admin")).toHaveAttribute("data-cohort", cohortId);
  }

  member(email: string): Locator {
    return this.page.locator(`[data-testid="members"] tr[data-email="${email}"]`);
  }

  invitation(email: string): Locator {
    return this.page.locator(`[data-testid="pending"] tr[data-email="${email}"]`);
  }

  /** Adds by email with the form; answers the outcome the page shows (added, alreadyMember, invited). */
  async addByEmail(email: string, role: "learner" | "instructor" = "learner"): Promise<string> {
    const form = this.page.getByTestId("invite-form");
    await form.getByLabel("メールアドレス").fill(email);
    await form.getByLabel("ロール").selectOption(role);
    await form.getByRole("button", { name: "追加または招待" }).click();
    const result = this.page.getByTestId("add-result");
    await expect(result).toContainText(email);
    await expect(form.getByLabel("メールアドレス")).toHaveValue(""); // the form clears after sending
    return (await result.getAttribute("data-outcome"))!;
  }

  /** Removes a member, accepting the confirmation, and waits until the row is gone. */
  async remove(email: string): Promise<void> {
    this.page.once("dialog", (d) => void d.accept());
    await this.member(email).getByRole("button", { name: "外す" }).click();
    await expect(this.member(email)).toHaveCount(0);
  }

  /** Imports a CSV text; answers the report. */
  async importCsv(text: string): Promise<Locator> {
    const form = this.page.getByTestId("csv-form");
    await form.locator('input[type="file"]').setInputFiles({ name: "class.csv", mimeType: "text/csv", buffer: Buffer.from(text) });
    await form.getByRole("button", { name: "取り込む" }).click();
    const report = this.page.getByTestId("csv-report");
    await expect(report).toBeVisible();
    return report;
  }

  /** Revokes an open invitation, accepting the confirmation, and waits until it is no longer listed. */
  async revoke(email: string): Promise<void> {
    this.page.once("dialog", (d) => void d.accept());
    await this.invitation(email).getByRole("button", { name: "取り消す" }).click();
    await expect(this.invitation(email)).toHaveCount(0);
  }
}
