#!/usr/bin/env bash
# A hardening file that turns routing off, read after everything else; no module files yet.
set -euo pipefail
cat >/etc/sysctl.d/zz-hardening.conf <<'CONF'
# セキュリティ点検 (2023-04): ルーティングを禁止する
net.ipv4.ip_forward = 0
CONF
sysctl -q -w net.ipv4.ip_forward=0
rm -f /etc/modules-load.d/k8s.conf /etc/sysctl.d/k8s.conf
sync
