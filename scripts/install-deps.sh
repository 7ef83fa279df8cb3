#!/usr/bin/env bash
# Installs what Labdeck needs on a fresh Debian/Ubuntu machine: system packages from Debian and
# npm packages from package-lock.json. Idempotent: skips apt when everything is present, and
# npm ci when node_modules was installed from the same lockfile (stamp below).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/apt.sh

# chromium: e2e browser (Playwright drives Debian's build; it cannot download its own here)
# openssh-server: sshd for the local test/dev hosts; iproute2 + util-linux: network/UTS namespaces
# fonts-noto-cjk: Japanese glyphs in the browser
# qemu-system-x86 + qemu-utils: lab VMs and their qcow2 disks; debootstrap: builds the lab image
# from Debian packages; vde-switch: each session's private L2 network (server/machines/qemu/)
# ansible-core: the kubespray lab's checks are tested with real ansible-inventory/ansible-playbook
# (server/labs/course-labs.int.test.ts)
# nginx-light: the reverse proxy in front of two server processes in e2e/replicas.spec.ts
# nftables: the `inet labdeck` table that keeps internet labs' VMs off the host and private ranges
# (server/machines/qemu/egress.ts)
# pyflakes3: lints the holder's Python (scripts/test-fast.sh), and brings the python3 its unit tests run on
APT_PACKAGES=(chromium openssh-server iproute2 util-linux fonts-noto-cjk ca-certificates
  qemu-system-x86 qemu-utils debootstrap vde-switch ansible-core nginx-light nftables pyflakes3)
# --test (.ci/run, and anyone running `npm test`): what only the test suite needs.
# firefox-esr: the copy-and-paste test in Firefox (e2e/firefox/), driven over WebDriver BiDi.
if [[ ${1:-} == --test ]]; then
  APT_PACKAGES+=(firefox-esr)
elif [[ -n ${1:-} ]]; then
  echo "usage: bash scripts/install-deps.sh [--test]" >&2
  exit 2
fi

missing=()
for pkg in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if ((${#missing[@]})); then
  if [[ $(id -u) -ne 0 ]]; then
    echo "labdeck: missing system packages (${missing[*]}); run this as root: su - (or sudo -i), then bash scripts/install-deps.sh" >&2
    exit 1
  fi
  echo "==> apt-get install ${missing[*]}"
  apt_get update -qq
  export DEBIAN_FRONTEND=noninteractive
  apt_get install -y -qq --no-install-recommends "${missing[@]}"
fi

# npm ci replaces node_modules (~1 min). It is skipped when node_modules was installed from the
# same package.json, package-lock.json and Prisma schema (postinstall generates the client from
# it) by the same Node version: the stamp holds their hash and is written after a good install.
stamp=node_modules/.labdeck-install-stamp
want=$( { node --version; cat package.json package-lock.json prisma/schema.prisma; } | sha256sum | cut -d' ' -f1)
if [[ -d node_modules && -d server/db/generated && $(cat "$stamp" 2>/dev/null) == "$want" ]]; then
  echo "==> npm packages: up to date (package-lock.json unchanged)"
else
  echo "==> npm ci"
  # Browsers come from Debian (above); Playwright must not try to download its own.
  PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --no-audit --no-fund --loglevel=error
  printf '%s\n' "$want" >"$stamp"
fi
