#!/usr/bin/env bash
# README command 2 (`npm test`): the whole suite against real parts — a production build,
# typecheck, integration tests (real sshd hosts in network namespaces, embedded PostgreSQL, the
# gateway), and e2e in Debian's Chromium. Each suite starts the services it needs. Needs root.
set -uo pipefail
cd "$(dirname "$0")/.."
mkdir -p .test-reports  # not test-results/: Playwright empties that folder when it starts
status=0

echo "==> next build"
source scripts/lib/build-stamp.sh
want=$(build_inputs_hash)
# The stamp lets scripts/up.sh reuse this build (scripts/lib/build-stamp.sh).
if npx next build >.test-reports/next-build.log 2>&1; then printf '%s\n' "$want" >"$BUILD_STAMP"; else cat .test-reports/next-build.log; status=1; fi
# A quiet build is part of the suite: a warning Next prints (e.g. a server module traced into a
# route) fails it, so the next one is fixed when it appears rather than buried in 60 lines.
# One notice is about the machine, not the code: on a CI runner (CI=true) with no .next/cache, Next
# says "No build cache found" — every clean clone. That line alone is let through.
build_warnings() { grep -vF 'No build cache found' .test-reports/next-build.log | grep -E "$@" 'Warning:|⚠|warnings?:'; }
if build_warnings -q; then
  echo "next build printed warnings:"; build_warnings -A12; status=1
fi

# After the build: it writes next-env.d.ts and .next/types, which the typecheck includes.
echo "==> typecheck"
npx tsc --noEmit || status=1

echo "==> integration tests (vitest)"
npx vitest run --reporter=default --reporter=json --outputFile.json=.test-reports/vitest.json || status=1

echo "==> e2e (Playwright, Debian Chromium)"
PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 PLAYWRIGHT_JSON_OUTPUT_NAME=.test-reports/playwright.json \
  npx playwright test --reporter=list,json || status=1

# The browser benchmark in its short mode (bench/README.md): the lab page against the browser's floor in
# Chromium. It fails only when it cannot measure; its figures are printed, not asserted.
echo "==> browser bench (short)"
npx tsx bench/browser-typing.ts --mode short --json .test-reports/browser-typing.json || status=1

# One plain closing line over both runners.
node -e '
const fs = require("fs");
const read = (f) => { try { return JSON.parse(fs.readFileSync(f, "utf8")); } catch { return null; } };
const v = read(".test-reports/vitest.json"), p = read(".test-reports/playwright.json");
let passed = 0, failed = 0, skipped = 0;
if (v) { passed += v.numPassedTests; failed += v.numFailedTests; skipped += v.numPendingTests + v.numTodoTests; } else failed++;
if (p) { passed += p.stats.expected; failed += p.stats.unexpected + p.stats.flaky; skipped += p.stats.skipped; } else failed++;
// The failed tests by name, last: CI shows the end of the output.
const names = [];
// With the first lines of why: CI keeps only the end of the output.
const why = (messages) => (messages ?? []).join("\n").replace(/\x1b\[[0-9;]*m/g, "").split("\n").filter((l) => l.trim()).slice(0, 6).map((l) => `    ${l.slice(0, 300)}`).join("\n");
for (const file of v?.testResults ?? []) for (const t of file.assertionResults ?? []) if (t.status === "failed") names.push(`vitest ${file.name.replace(process.cwd() + "/", "")} > ${t.fullName ?? t.title}\n${why(t.failureMessages)}`);
const walk = (suite, trail) => {
  for (const spec of suite.specs ?? []) for (const test of spec.tests ?? []) if (test.status === "unexpected" || test.status === "flaky") names.push(`playwright ${[...trail, spec.title].join(" > ")} (${test.status})\n${why((test.results ?? []).flatMap((r) => (r.errors ?? []).map((e) => e.message ?? "")))}`);
  for (const child of suite.suites ?? []) walk(child, [...trail, child.title]);
};
for (const suite of p?.suites ?? []) walk(suite, [suite.title]);
for (const name of names) console.log(`FAILED: ${name}`);
console.log(`${passed} passed, ${failed} failed, ${skipped} skipped`);
'
exit $status
