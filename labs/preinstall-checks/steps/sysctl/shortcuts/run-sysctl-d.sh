#!/usr/bin/env bash
# Read after zz-hardening.conf by sysctl --system now, but /run is empty at boot.
# expect-output: 再起動後: net.ipv4.ip_forward は 0 になります
# expect-output: /run/sysctl.d/zzz-k8s.conf
mkdir -p /run/sysctl.d
printf 'net.ipv4.ip_forward = 1\nnet.bridge.bridge-nf-call-iptables = 1\n' >/run/sysctl.d/zzz-k8s.conf
sysctl --system >/dev/null
