#!/usr/bin/env bash
# README command 1: install, build and start Labdeck on its embedded defaults — embedded
# PostgreSQL and local QEMU lab machines — then print the URL to open. Ctrl-C stops it.
# Needs root (system packages; QEMU networking and the optional local sshd hosts).
#
#   LABDECK_MACHINES=static   use LABDECK_HOSTS_FILE, or (unset) three quick sshd hosts in
#                             network namespaces instead of VMs: a demo without real kernels.
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ $(id -u) -ne 0 ]]; then
  echo "labdeck: scripts/up.sh needs root (apt packages, VMs and network namespaces)" >&2
  exit 1
fi

bash scripts/install-deps.sh
echo "==> next build"
npx next build >/dev/null

export LABDECK_DATA_DIR=${LABDECK_DATA_DIR:-/var/lib/labdeck}
export HOST=${HOST:-127.0.0.1} PORT=${PORT:-3000}
mkdir -p "$LABDECK_DATA_DIR" && chmod 711 "$LABDECK_DATA_DIR"

if [[ ${LABDECK_MACHINES:-qemu} == qemu ]]; then
  # The lab image is built once from Debian packages (a few minutes, with progress) and cached
  # under the data directory by its recipe; later runs find it at once.
  echo "==> lab machine image (built on first run)"
  npm run -s labdeck -- image build >/dev/null
elif [[ -z ${LABDECK_HOSTS_FILE:-} ]]; then
  echo "==> starting local sshd hosts (controlplane, node01, node02) in network namespaces"
  export LABDECK_HOSTS_FILE=$LABDECK_DATA_DIR/hosts.json
  npx tsx server/machines/netns-hosts-cli.ts up --id dev --subnet 10 \
    --dir "$LABDECK_DATA_DIR/dev-hosts" --out "$LABDECK_HOSTS_FILE" --allocation shared >/dev/null
  trap 'npx tsx server/machines/netns-hosts-cli.ts down --id dev --dir "$LABDECK_DATA_DIR/dev-hosts" >/dev/null' EXIT
fi

echo "==> starting Labdeck (Ctrl-C to stop)"
NODE_ENV=production node --import tsx server.ts | while IFS= read -r line; do
  if [[ $line == LABDECK_READY* ]]; then
    url=${line#LABDECK_READY }
    # On the very first start the server printed the first admin's email and password just above
    # (once; only its hash is kept). Later starts print no password.
    printf '\n  Labdeck is running: %s\n  Sign in at %s/login (first start: the admin login is printed above).\n  Invite learners at %s/admin/invitations.\n\n' "$url" "$url" "$url"
  else
    printf '%s\n' "$line"
  fi
done
