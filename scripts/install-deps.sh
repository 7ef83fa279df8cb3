#!/usr/bin/env bash
# Installs what Labdeck needs on a fresh Debian/Ubuntu machine: system packages from Debian and
# npm packages from package-lock.json. Idempotent; skips apt when everything is present.
set -euo pipefail
cd "$(dirname "$0")/.."

# chromium: e2e browser (Playwright drives Debian's build; it cannot download its own here)
# openssh-server: sshd for the local test/dev hosts; iproute2 + util-linux: network/UTS namespaces
# fonts-noto-cjk: Japanese glyphs in the browser
# qemu-system-x86 + qemu-utils: lab VMs and their qcow2 disks; debootstrap: builds the lab image
# from Debian packages; vde-switch: each session's private L2 network (server/machines/qemu/)
# ansible-core: the kubespray lab's checks are tested with real ansible-inventory/ansible-playbook
# (server/labs/course-labs.test.ts)
APT_PACKAGES=(chromium openssh-server iproute2 util-linux fonts-noto-cjk ca-certificates
  qemu-system-x86 qemu-utils debootstrap vde-switch ansible-core)

missing=()
for pkg in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if ((${#missing[@]})); then
  if [[ $(id -u) -ne 0 ]]; then
    echo "labdeck: missing system packages: ${missing[*]} — run as root or: sudo apt-get install -y ${missing[*]}" >&2
    exit 1
  fi
  echo "==> apt-get install ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

echo "==> npm ci"
# Browsers come from Debian (above); Playwright must not try to download its own.
PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --no-audit --no-fund --loglevel=error
