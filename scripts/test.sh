#!/usr/bin/env bash
# README command 2 (`npm test`): the whole suite against real parts. Needs root.
#   1. a production build (e2e and the server-process tests run it)
#   2. two streams side by side, each starting the services it needs:
#      machines  the QEMU lane: the vitest vm lane, the tests that share its fixed egress
#                sentinels, then the VM e2e (real VMs, minutes under TCG; mostly waiting on guests)
#      main      the fast lane (typecheck, lint, room order, format, holder tests, unit and db
#                tests), the integration lane (network namespaces), the netns e2e in Chromium,
#                the browser benchmark's short mode (it fails only when it cannot measure), and
#                one VM test moved here so that the streams end together
# The streams share nothing but the build and the CPUs: their ports, namespaces and data
# directories differ. The machines stream's output follows the main stream's, then one summary.
set -uo pipefail
cd "$(dirname "$0")/.."
reports=.test-reports # not test-results/: Playwright empties that folder when it starts
mkdir -p "$reports"
rm -f "$reports"/*.json
status=0

# The VM lane's image (a cold build is minutes of debootstrap, mostly waiting on the mirror and the
# disk): made beside the production build, so the machines stream finds it ready.
rm -f "$reports/test-image.rc"
(
  node --import tsx server/testing/build-test-image.ts >"$reports/test-image.log" 2>&1
  echo $? >"$reports/test-image.rc"
) &

echo "==> next build"
source scripts/lib/build-stamp.sh
want=$(build_inputs_hash)
# The stamp lets scripts/up.sh reuse this build (scripts/lib/build-stamp.sh).
if npx next build >"$reports/next-build.log" 2>&1 && node scripts/build-server.mjs >>"$reports/next-build.log" 2>&1; then
  printf '%s\n' "$want" >"$BUILD_STAMP"
else
  cat "$reports/next-build.log"
  status=1
fi
# A quiet build is part of the suite: a warning Next prints (e.g. a server module traced into a
# route) fails it, so the next one is fixed when it appears rather than buried in 60 lines.
# One notice is about the machine, not the code: on a CI runner (CI=true) with no .next/cache, Next
# says "No build cache found" — every clean clone. That line alone is let through.
build_warnings() { grep -vF 'No build cache found' "$reports/next-build.log" | grep -E "$@" 'Warning:|⚠|warnings?:'; }
if build_warnings -q; then
  echo "next build printed warnings:"
  build_warnings -A12
  status=1
fi

# The egress tests and the QEMU internet sessions use the same fixed sentinel namespaces and
# addresses (server/testing/egress-sentinels.ts): both run in the machines stream, one after the other.
EGRESS_TEST=server/machines/qemu/egress.int.test.ts
# A VM test that runs at the main stream's end instead, where it is shorter than the machines
# stream's tail: the streams end closer together (both are CPU-bound on 2 cores).
BALANCED_VM_TEST=server/exams/scoring.vm.test.ts

machines_stream() {
  local s=0
  echo "==> [machines] the test image"
  # Its builder is the main shell's child, not this stream's: its exit status comes as a file.
  while [[ ! -s $reports/test-image.rc ]]; do sleep 2; done
  cat "$reports/test-image.log"
  [[ $(cat "$reports/test-image.rc") == 0 ]] || s=1
  echo "==> [machines] egress tests (network namespaces)"
  npx vitest run --project integration "$EGRESS_TEST" --reporter=default --reporter=json --outputFile.json="$reports/vitest-egress.json" || s=1
  echo "==> [machines] vm lane (vitest, real QEMU VMs)"
  LABDECK_TEST_EXCLUDE="$BALANCED_VM_TEST" npx vitest run --project vm --reporter=default --reporter=json --outputFile.json="$reports/vitest-vm.json" || s=1
  echo "==> [machines] e2e on real VMs (Playwright, Debian Chromium)"
  PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 PLAYWRIGHT_JSON_OUTPUT_NAME="$reports/playwright-vm.json" \
    npx playwright test --project vm --reporter=list,json || s=1
  return $s
}

started=$(date +%s)
machines_stream >"$reports/machines-stream.log" 2>&1 &
machines_pid=$!

echo "==> fast lane (scripts/test-fast.sh)"
bash scripts/test-fast.sh --reporter=default --reporter=json --outputFile.json="$reports/vitest-fast.json" || status=1

echo "==> integration lane (vitest: network namespaces, fake roots, server processes)"
# One file at a time. Files could run side by side (each has subnets of its own, checked by
# server/testing/subnets.test.ts), but on 2 cores that starved the machines stream's TCG guests:
# a clean-clone run with two at once ended the main stream 16 min earlier and the whole run 5 min later.
LABDECK_TEST_EXCLUDE="$EGRESS_TEST" npx vitest run --project integration --reporter=default --reporter=json \
  --outputFile.json="$reports/vitest-integration.json" || status=1

echo "==> e2e on netns hosts (Playwright, Debian Chromium)"
PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 PLAYWRIGHT_JSON_OUTPUT_NAME="$reports/playwright-netns.json" \
  npx playwright test --project netns --reporter=list,json || status=1

echo "==> browser bench (short)"
npx tsx bench/browser-typing.ts --mode short --json "$reports/browser-typing.json" || status=1
echo "==> a vm test to balance the streams ($BALANCED_VM_TEST)"
while [[ ! -s $reports/test-image.rc ]]; do sleep 2; done
npx vitest run --project vm "$BALANCED_VM_TEST" --reporter=default --reporter=json --outputFile.json="$reports/vitest-vm-main.json" || status=1
echo "==> main stream done after $(($(date +%s) - started)) s; waiting for the machines stream"

wait "$machines_pid" || status=1
echo "==> machines stream (done after $(($(date +%s) - started)) s):"
cat "$reports/machines-stream.log"

# One plain closing line over every runner's report, the failed tests by name last (CI shows
# the end of the output), with the first lines of why.
node scripts/test-summary.mjs "$reports" vitest-fast vitest-integration vitest-egress vitest-vm vitest-vm-main playwright-netns playwright-vm || status=1
exit $status
