/** The learner's home (/): their cohorts (`my-cohorts`), each with links to its labs. */
import type { Locator, Page } from "@playwright/test";

export class HomePage {
  constructor(readonly page: Page) {}

  async goto(): Promise<void> {
    await this.page.goto("/");
  }

  cohort(name: string): Locator {
    return this.page.getByTestId("my-cohorts").locator("li", { hasText: name });
  }

  cohortLab(name: string, slug: string): Locator {
    return this.cohort(name).locator(`a[href="/labs/${slug}"]`);
  }
}
