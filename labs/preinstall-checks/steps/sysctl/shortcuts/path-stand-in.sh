#!/usr/bin/env bash
# A stand-in `sysctl` early on PATH (/usr/local/sbin) that answers 1 for everything, and the files
# written, but the zz- file still wins and nothing was applied: /proc/sys says 0.
# expect-output: 今: net.ipv4.ip_forward は 0 です
printf 'net.bridge.bridge-nf-call-iptables = 1\nnet.ipv4.ip_forward = 1\n' >/etc/sysctl.d/k8s.conf
printf '#!/bin/sh\necho 1\n' >/usr/local/sbin/sysctl
chmod 755 /usr/local/sbin/sysctl
