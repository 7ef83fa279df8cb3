# The hash of everything `npm run build` reads (next build and the server bundle), kept in .next/labdeck-build-stamp after a build so a
# start with nothing changed skips the build (scripts/up.sh). Content is hashed, not mtimes or
# the index: unstaged edits and untracked files count. Files come from git in a checkout
# (tracked and untracked, not ignored), else from find; test files do not count.

BUILD_STAMP=.next/labdeck-build-stamp

build_inputs() {
  local paths=(app components server server.ts scripts/build-server.mjs messages i18n proxy.ts next.config.ts postcss.config.mjs
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

# The lab image's inputs (its recipes and guest files, the builder, the holder it carries) and the
# mirror it is built from: scripts/up.sh skips `image build` (a Node start and an image check,
# seconds) when they are what the last build saw and a built image is there.
image_inputs_hash() {
  {
    printf '%s\n' "${LABDECK_DEBIAN_MIRROR:-}"
    find server/machines/images server/machines/qemu/image.ts server/machines/qemu/mirror.ts server/holder/labdeck-holder \
      -type f -not -name '*.test.ts' -print0 | LC_ALL=C sort -z | xargs -0 -r sha256sum --
  } | sha256sum | cut -d' ' -f1
}
