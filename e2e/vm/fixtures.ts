/**
 * The `test` of VM-backed e2e: one server with QEMU machines per worker (vm-server.ts), started
 * before the first test and stopped, with every VM of the run, after the last. A worker fixture
 * rather than a `webServer` entry, so only runs that include the `vm` project boot VMs.
 */
import { test as base } from "@playwright/test";
import { joinNewCohort, signInNewUser } from "../accounts";
import { IMAGE_BUILD_TIMEOUT_MS } from "../../server/machines/qemu/test-image";
import { POOL_READY_TIMEOUT_MS, startVmServer, type VmServer } from "./vm-server";

/**
 * Port of the VM e2e server (loopback); its embedded PostgreSQL takes the next one. The netns e2e
 * server, which runs at the same time, has 3217 and 3218.
 */
const PORT = Number(process.env.E2E_VM_PORT ?? 3227);
/** The labs the VM e2e tests open. */
const VM_E2E_LABS = ["preinstall-checks"];
/** A cold image build, then the pool's first boot, plus the graceful stop. */
const SERVER_FIXTURE_TIMEOUT_MS = IMAGE_BUILD_TIMEOUT_MS + POOL_READY_TIMEOUT_MS + 2 * 60_000;

export const test = base.extend<{ learnerEmail: string }, { vmServer: VmServer }>({
  vmServer: [
    // eslint-disable-next-line no-empty-pattern -- Playwright requires the destructuring even without dependencies
    async ({}, use) => {
      const server = await startVmServer({ port: PORT });
      await use(server);
      const stopped = await server.stop();
      console.log(
        `e2e vm server: ${stopped.killed ? "killed after its graceful stop timed out" : "stopped"} in ${stopped.serverStopMs} ms; ` +
          `then removed QEMU sessions: ${stopped.removedSessions.join(", ") || "none"}; no process of the run is left`,
      );
    },
    { scope: "worker", timeout: SERVER_FIXTURE_TIMEOUT_MS },
  ],
  baseURL: async ({ vmServer }, use) => {
    await use(vmServer.url);
  },
  // Each test is a freshly invited learner, signed in before it starts (as in e2e/fixtures.ts),
  // in a cohort with the course labs these tests open (learners start only their cohorts' labs).
  learnerEmail: [
    async ({ context, baseURL }, use) => {
      const email = await signInNewUser(context, baseURL!, "learner");
      await joinNewCohort(baseURL!, email, VM_E2E_LABS);
      await use(email);
    },
    { auto: true },
  ],
});
