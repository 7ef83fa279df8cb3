#!/usr/bin/env bash
# The lesson's first try: zz-hardening.conf puts ip_forward back to 0 even now.
# expect-output: 今: net.ipv4.ip_forward は 0 です
printf 'net.ipv4.ip_forward = 1\nnet.bridge.bridge-nf-call-iptables = 1\n' >/etc/sysctl.d/k8s.conf
sysctl --system >/dev/null
