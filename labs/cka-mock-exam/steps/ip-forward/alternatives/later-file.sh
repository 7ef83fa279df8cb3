#!/usr/bin/env bash
# A file read after zz-hardening.conf wins at boot.
echo 'net.ipv4.ip_forward = 1' > /etc/sysctl.d/zzz-kubernetes.conf
sysctl --system >/dev/null
