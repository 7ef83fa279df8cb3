import { defineConfig } from "@playwright/test";
import { CHROMIUM_ARGS, CHROMIUM_PATH } from "./e2e/chromium";

/** Port the e2e server listens on (loopback only). */
const PORT = Number(process.env.E2E_PORT ?? 3217);

/**
 * Only the VM project asked for (`--project vm`, as the suite's machines stream runs it): no netns
 * server, which the netns project (running at the same time in the main stream) has started itself.
 */
const argv = process.argv;
const projects = argv.flatMap((arg, i) => (arg === "--project" ? [argv[i + 1]] : arg.startsWith("--project=") ? [arg.slice(10)] : []));
const vmOnly = projects.length > 0 && projects.every((p) => p === "vm");

export default defineConfig({
  testDir: "e2e",
  timeout: 120_000,
  expect: { timeout: 20_000 },
  fullyParallel: false,
  workers: 1,
  retries: 0,
  reporter: [["list"]],
  // The machines stream's VM run and the main stream's netns run go side by side: each cleans
  // its output folder at start, so they must not share one (traces vanished mid-run when they did).
  outputDir: vmOnly ? "test-results/vm" : "test-results/netns",
  use: {
    baseURL: `http://127.0.0.1:${PORT}`,
    trace: "retain-on-failure",
    launchOptions: {
      // Debian's Chromium; Playwright's own browser download is not reachable here.
      executablePath: CHROMIUM_PATH,
      args: CHROMIUM_ARGS,
    },
  },
  projects: [
    // Real sshd hosts in network namespaces: the terminal path, the grader, the UI (webServer below).
    // e2e/firefox runs under vitest (puppeteer-core drives Firefox; Playwright cannot here).
    { name: "netns", testIgnore: ["**/e2e/vm/**", "**/e2e/firefox/**"] },
    // Real QEMU VMs (real kernels) for labs that need them; the server is a worker fixture
    // (e2e/vm/fixtures.ts) so only runs that include this project boot VMs. Minutes under TCG.
    { name: "vm", testDir: "e2e/vm" },
  ],
  webServer: vmOnly
    ? undefined
    : {
        // Real sshd hosts in network namespaces + the real server (production build) on embedded PostgreSQL.
        // E2E_SUBNET: another host subnet, for a run beside another checkout's (CI's uses the default).
        command: `npx tsx e2e/serve.ts --port ${PORT}${process.env.E2E_SUBNET ? ` --subnet ${Number(process.env.E2E_SUBNET)}` : ""}`,
        url: `http://127.0.0.1:${PORT}/login`,
        timeout: 180_000,
        reuseExistingServer: false,
        stdout: "pipe",
        stderr: "pipe",
        gracefulShutdown: { signal: "SIGTERM", timeout: 20_000 },
      },
});
