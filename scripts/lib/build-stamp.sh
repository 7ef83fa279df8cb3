# The hash of everything `next build` reads, kept in .next/labdeck-build-stamp after a build so a
# start with nothing changed skips the build (scripts/up.sh). Content is hashed, not mtimes or
# the index: unstaged edits and untracked files count. Files come from git in a checkout
# (tracked and untracked, not ignored), else from find; test files do not count.

BUILD_STAMP=.next/labdeck-build-stamp

build_inputs() {
  local paths=(app components server messages i18n proxy.ts next.config.ts postcss.config.mjs
    tsconfig.json package.json package-lock.json prisma/schema.prisma)
  if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    git ls-files -z --cached --others --exclude-standard -- "${paths[@]}" ':(exclude)*.test.ts'
  else
    find "${paths[@]}" -type f -not -path 'server/db/generated/*' -not -name '*.test.ts' -print0 2>/dev/null
  fi
}

# (A file deleted but not yet staged is listed and cannot be read: it drops out of the hash.)
build_inputs_hash() {
  { build_inputs | LC_ALL=C sort -z | xargs -0 -r sha256sum -- 2>/dev/null || true; } | sha256sum | cut -d' ' -f1
}
