/**
 * `test` whose page belongs to a freshly invited learner, signed in before the test starts (each
 * test is its own learner, so its lab session starts fresh).
 */
import { test as base } from "@playwright/test";
import { signInNewUser } from "./accounts";

export const test = base.extend<{ learnerEmail: string }>({
  learnerEmail: [
    async ({ context, baseURL }, use) => {
      await use(await signInNewUser(context, baseURL!, "learner"));
    },
    { auto: true },
  ],
});

export { expect } from "@playwright/test";
