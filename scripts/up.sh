#!/usr/bin/env bash
# README command 1: install, build and start Labdeck on its embedded defaults — embedded
# PostgreSQL and local QEMU lab machines — then print the URL to open. Ctrl-C stops it.
# Needs root (system packages; QEMU networking and the optional local sshd hosts).
# A second run with nothing changed skips npm ci and next build (stamps below) and starts in
# seconds; after a crash it also recovers the database (server/db/embedded.ts).
#
#   LABDECK_MACHINES=static      machines from LABDECK_HOSTS_FILE (default <data dir>/hosts.json).
#   LABDECK_MACHINES=netns-demo  LABDECK_HOSTS_FILE, or (unset) three quick sshd hosts in network
#                                namespaces of THIS machine instead of VMs: a single-user demo
#                                without real kernels (whoever uses a terminal is root here).
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ $(id -u) -ne 0 ]]; then
  echo "labdeck: scripts/up.sh needs root (system packages, VMs, network namespaces); open a root shell (su -, or sudo -i where sudo is installed) and run: bash scripts/up.sh" >&2
  exit 1
fi

bash scripts/install-deps.sh

# next build (~1.5 min) is skipped when .next holds a build of the same sources: the stamp holds
# a hash of the content of every file the build reads (scripts/lib/build-stamp.sh).
source scripts/lib/build-stamp.sh
want=$(build_inputs_hash)
if [[ -f .next/BUILD_ID && -f dist/server.mjs && $(cat "$BUILD_STAMP" 2>/dev/null) == "$want" ]]; then
  echo "==> next build: up to date (no source changed since the last build)"
else
  echo "==> next build"
  npx next build >/dev/null
  node scripts/build-server.mjs >/dev/null
  printf '%s\n' "$want" >"$BUILD_STAMP"
fi

export LABDECK_DATA_DIR=${LABDECK_DATA_DIR:-/var/lib/labdeck}
export HOST=${HOST:-127.0.0.1} PORT=${PORT:-3000}
mkdir -p "$LABDECK_DATA_DIR" && chmod 711 "$LABDECK_DATA_DIR"

if [[ ${LABDECK_MACHINES:-qemu} == qemu ]]; then
  # The lab image is built once from Debian packages (a few minutes, with progress) and cached
  # under the data directory by its recipe; later runs find it at once.
  image_stamp=$LABDECK_DATA_DIR/images/.labdeck-image-stamp
  image_want=$(image_inputs_hash)
  if [[ $(cat "$image_stamp" 2>/dev/null) == "$image_want" ]] && compgen -G "$LABDECK_DATA_DIR/images/*/manifest.json" >/dev/null; then
    echo "==> lab machine image: up to date"
  else
    echo "==> lab machine image (built on first run)"
    npm run -s labdeck -- image build >/dev/null
    printf '%s\n' "$image_want" >"$image_stamp"
  fi
elif [[ $LABDECK_MACHINES == netns-demo && -z ${LABDECK_HOSTS_FILE:-} ]]; then
  echo "==> starting local sshd hosts (controlplane, node01, node02) in network namespaces"
  export LABDECK_HOSTS_FILE=$LABDECK_DATA_DIR/hosts.json
  npx tsx server/testing/netns-hosts-cli.ts up --id dev --subnet 10 \
    --dir "$LABDECK_DATA_DIR/dev-hosts" --out "$LABDECK_HOSTS_FILE" --allocation shared >/dev/null
  trap 'npx tsx server/testing/netns-hosts-cli.ts down --id dev --dir "$LABDECK_DATA_DIR/dev-hosts" >/dev/null' EXIT
fi

echo "==> starting Labdeck (Ctrl-C to stop)"
# The server runs in a session of its own (setsid), with its embedded PostgreSQL: Ctrl-C (SIGINT
# to the terminal's whole process group) reaches only this script, which passes it on to the
# server, so the server drains and stops the database last instead of the database dying first.
# The reader ignores Ctrl-C too and reads on until the server, shutting down, closes its output:
# its last lines are not lost. When the server dies however it dies, this script ends with it.
fifo=$(mktemp -u "${TMPDIR:-/tmp}/labdeck-up.XXXXXX")
mkfifo -m 600 "$fifo"
{
  trap '' INT
  while IFS= read -r line; do
    if [[ $line == LABDECK_READY* ]]; then
      url=${line#LABDECK_READY }
      # Until the first admin exists the server printed a one-time link just above that sets
      # their password (it expires; only its hash is kept). No password is ever printed.
      printf '\n  Labdeck is running: %s\n  Sign in at %s/login (first start: open the first admin link printed above).\n  Invite learners at %s/admin/invitations.\n\n' "$url" "$url" "$url"
    else
      printf '%s\n' "$line"
    fi
  done
} <"$fifo" &
reader=$!
NODE_ENV=production setsid node dist/server.mjs >"$fifo" &
server=$!
trap 'kill -INT "$server" 2>/dev/null' INT
trap 'kill -TERM "$server" 2>/dev/null' TERM HUP
# `wait` returns early when a trapped signal arrives: wait again until the server has ended.
status=0
wait "$server" || status=$?
while kill -0 "$server" 2>/dev/null; do
  status=0
  wait "$server" || status=$?
done
wait "$reader" || true
rm -f "$fifo"
exit "$status"
