#!/usr/bin/env bash
# The fast lane (`npm run test:fast`): what a developer runs before every commit, in minutes and
# without root: typecheck, lint (ESLint, the room order, the holder's Python), the formatter's
# check, unit tests (the holder's own in python3: -B keeps __pycache__ out of the checkout) and
# the database-only integration tests (embedded PostgreSQL). No VMs, no network namespaces.
# `npm test` runs this and the slower lanes.
set -uo pipefail
cd "$(dirname "$0")/.."
status=0
step() { echo "==> $1"; shift; "$@" || status=1; }

step "typecheck" npx tsc --noEmit
step "eslint" npx eslint --max-warnings 0 .
step "room order (dependency-cruiser)" npx depcruise server server.ts app components proxy.ts i18n --config .dependency-cruiser.cjs
step "format (prettier --check)" npx prettier --check --log-level warn .
step "holder tests (python3 unittest)" python3 -B -m unittest discover -s server/holder -p 'test_*.py'
step "holder lint (pyflakes3)" pyflakes3 server/holder/labdeck-holder server/holder/*.py
step "unit and database tests (vitest)" npx vitest run --project unit --project db "$@"
exit $status
