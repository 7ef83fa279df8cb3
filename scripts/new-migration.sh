#!/usr/bin/env bash
# Makes a migration from the change to prisma/schema.prisma since git HEAD (or $BASE):
#   bash scripts/new-migration.sh <name>
# `prisma migrate dev` does not work with driver adapters, so this diffs the two datamodels with
# `prisma migrate diff` against a throw-away embedded PostgreSQL (the CLI needs a connection).
set -euo pipefail
cd "$(dirname "$0")/.."
name=${1:?usage: scripts/new-migration.sh <name>}
[[ $name =~ ^[a-z0-9_]+$ ]] || { echo "migration name must match [a-z0-9_]+" >&2; exit 2; }
base=${BASE:-HEAD}
old=$(mktemp --suffix=.prisma)
git show "$base:prisma/schema.prisma" >"$old"
dir=prisma/migrations/$(date -u +%Y%m%d%H%M%S)_$name
# LOG_LEVEL=silent: the embedded database logs to stdout, which is the migration file here.
LOG_LEVEL=silent npx tsx scripts/with-temp-db.ts npx prisma migrate diff --from-schema-datamodel "$old" --to-schema-datamodel prisma/schema.prisma --script >"$dir.sql.tmp"
mkdir -p "$dir" && mv "$dir.sql.tmp" "$dir/migration.sql"
rm -f "$old"
echo "wrote $dir/migration.sql"
