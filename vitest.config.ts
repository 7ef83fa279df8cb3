import { fileURLToPath } from "node:url";
import { defineConfig, type TestProjectInlineConfiguration } from "vitest/config";

/**
 * Test lanes, by file name:
 *   unit         *.test.ts(x)       no root, no database, no machines (React components: jsdom, per file)
 *   db           *.db.test.ts       a real embedded PostgreSQL each; no root
 *   integration  *.int.test.ts      root: sshd hosts in network namespaces, fake roots in mount namespaces, server processes
 *   vm           *.vm.test.ts       real QEMU VMs (minutes under TCG)
 * `npm run test:fast` runs unit and db; `npm test` (scripts/test.sh) runs every lane. A plain
 * `vitest run` boots no VM: the vm lane runs only when named (`--project vm`) or with LABDECK_TEST_VM=1.
 */
const TESTS = ["server", "bench", "components", "scripts", "e2e/firefox", "app"].flatMap((dir) => [
  `${dir}/**/*.test.ts`,
  `${dir}/**/*.test.tsx`,
]);
const LANES = ["db", "int", "vm"] as const;

/**
 * Files side by side in the unit and db lanes: more than the 2 cores, since most of those files
 * wait (embedded PostgreSQL starting, CLI processes, a 15 s header timeout): measured on this
 * machine, 4 workers ran the lanes in 119 s against 306 s with vitest's default (cores - 1).
 */
const PARALLEL_FILES = 4;

/**
 * Integration tests' limits per test and hook, ms: real processes on a 2-core machine that CI
 * shares with TCG guests (with two integration files at once, 60 s tests took 58-60 s there).
 */
const INTEGRATION_TIMEOUT_MS = 180_000;

function lane(name: string, suffix: (typeof LANES)[number] | null, parallel: boolean): TestProjectInlineConfiguration {
  const include = suffix ? TESTS.filter((p) => p.endsWith(".ts")).map((p) => p.replace(/\.test\.ts$/, `.${suffix}.test.ts`)) : TESTS;
  const exclude = suffix ? [] : LANES.flatMap((l) => [`**/*.${l}.test.ts`, `**/*.${l}.test.tsx`]);
  const limits = suffix === "int" ? { testTimeout: INTEGRATION_TIMEOUT_MS, hookTimeout: INTEGRATION_TIMEOUT_MS } : {};
  // Files a run leaves to another (scripts/test.sh): vitest's --exclude does not reach a project's own list.
  const left = (process.env.LABDECK_TEST_EXCLUDE ?? "").split(",").filter(Boolean);
  return {
    extends: true,
    test: { name, include, exclude: [...exclude, ...left, "**/node_modules/**"], fileParallelism: parallel, ...limits },
  };
}

const vmAsked =
  process.env.LABDECK_TEST_VM === "1" ||
  process.argv.some((arg, i) => arg === "--project=vm" || (arg === "--project" && process.argv[i + 1] === "vm"));

export default defineConfig({
  // The `@/` import prefix of tsconfig.json's paths, for modules shared with the browser.
  resolve: { alias: { "@/": fileURLToPath(new URL("./", import.meta.url)) } },
  test: {
    testTimeout: 60000,
    hookTimeout: 60000,
    maxWorkers: PARALLEL_FILES,
    projects: [
      // Pure code and embedded databases on free ports: files run side by side.
      lane("unit", null, true),
      lane("db", "db", true),
      // Network namespaces, sshd hosts and server processes: each file has subnets of its own (a
      // subnet in use is refused, netns-hosts.ts; server/testing/subnets.test.ts). One at a time:
      // beside the TCG guests of `npm test`, two at once slowed the whole run (scripts/test.sh).
      lane("integration", "int", false),
      ...(vmAsked ? [lane("vm", "vm", false)] : []),
    ],
  },
});
