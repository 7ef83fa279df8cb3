#!/usr/bin/env bash
# A file under /run/sysctl.d (tmpfs): gone at boot.
# expect-output: /run
mkdir -p /run/sysctl.d
echo 'net.ipv4.ip_forward = 1' > /run/sysctl.d/zzz-forward.conf
sysctl --system >/dev/null
