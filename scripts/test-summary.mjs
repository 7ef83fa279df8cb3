// The closing lines of `npm test`: passed, failed and skipped over every runner's JSON report
// (vitest-*.json, playwright-*.json in the reports folder), then each failed test by name with
// the first lines of why. A report that is missing counts as a failure (its runner did not finish).
//   node scripts/test-summary.mjs <reports dir> <report name>...
import fs from "node:fs";
import path from "node:path";

const [dir, ...names] = process.argv.slice(2);
const read = (name) => {
  try {
    return JSON.parse(fs.readFileSync(path.join(dir, `${name}.json`), "utf8"));
  } catch {
    return null;
  }
};
const why = (messages) =>
  (messages ?? [])
    .join("\n")
    .replace(/\x1b\[[0-9;]*m/g, "")
    .split("\n")
    .filter((l) => l.trim())
    .slice(0, 6)
    .map((l) => `    ${l.slice(0, 300)}`)
    .join("\n");

let passed = 0;
let failed = 0;
let skipped = 0;
const failures = [];
for (const name of names) {
  const report = read(name);
  if (!report) {
    failed++;
    failures.push(`${name}: no report (the runner did not finish)`);
    continue;
  }
  if (name.startsWith("vitest")) {
    passed += report.numPassedTests;
    failed += report.numFailedTests;
    skipped += report.numPendingTests + report.numTodoTests;
    for (const file of report.testResults ?? []) {
      if (file.status === "failed" && (file.assertionResults ?? []).every((t) => t.status !== "failed")) {
        failed++;
        failures.push(`vitest ${path.relative(process.cwd(), file.name)} (the file failed)\n${why([file.message])}`);
      }
      for (const t of file.assertionResults ?? []) {
        if (t.status === "failed")
          failures.push(`vitest ${path.relative(process.cwd(), file.name)} > ${t.fullName ?? t.title}\n${why(t.failureMessages)}`);
      }
    }
  } else {
    passed += report.stats.expected;
    failed += report.stats.unexpected + report.stats.flaky;
    skipped += report.stats.skipped;
    const walk = (suite, trail) => {
      for (const spec of suite.specs ?? [])
        for (const test of spec.tests ?? [])
          if (test.status === "unexpected" || test.status === "flaky") {
            const errors = (test.results ?? []).flatMap((r) => (r.errors ?? []).map((e) => e.message ?? ""));
            failures.push(`playwright ${[...trail, spec.title].join(" > ")} (${test.status})\n${why(errors)}`);
          }
      for (const child of suite.suites ?? []) walk(child, [...trail, child.title]);
    };
    for (const suite of report.suites ?? []) walk(suite, [suite.title]);
  }
}
for (const failure of failures) console.log(`FAILED: ${failure}`);
console.log(`${passed} passed, ${failed} failed, ${skipped} skipped`);
process.exit(failed > 0 ? 1 : 0);
