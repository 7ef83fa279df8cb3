#!/usr/bin/env bash
# 1 now, nothing for the next boot.
# expect-output: 再起動後: net.ipv4.ip_forward は 0 になります。最後にこの値を設定しているのは /etc/sysctl.d/zz-hardening.conf
sysctl -w net.ipv4.ip_forward=1 net.bridge.bridge-nf-call-iptables=1 >/dev/null
