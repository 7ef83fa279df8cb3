#!/usr/bin/env bash
set -e
printf 'net.ipv4.ip_forward = 1\n' > /etc/sysctl.d/k8s.conf
sed -i 's/^\([[:space:]]*net\.ipv4\.ip_forward[[:space:]]*=.*\)$/# Kubernetes のため無効化: \1/' /etc/sysctl.d/zz-hardening.conf
sysctl --system >/dev/null
