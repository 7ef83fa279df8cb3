#!/usr/bin/env bash
# The fast lane (`npm run test:fast`): what a developer runs before every commit, in minutes and
# without root: typecheck, lint (ESLint, the room order, the holder's Python), the formatter's
# check, unit tests and the database-only integration tests (embedded PostgreSQL). No VMs, no
# network namespaces. `npm test` runs this and the slower lanes.
set -uo pipefail
cd "$(dirname "$0")/.."
status=0
step() { echo "==> $1"; shift; "$@" || status=1; }

step "typecheck" npx tsc --noEmit
step "eslint" npx eslint --max-warnings 0 .
step "room order (dependency-cruiser)" npx depcruise server server.ts app components proxy.ts i18n --config .dependency-cruiser.cjs
step "format (prettier --check)" npx prettier --check --log-level warn .
step "unit and database tests (vitest)" npx vitest run --project unit --project db "$@"
exit $status
