#!/usr/bin/env bash
# A file read after zz-hardening.conf wins; zz- stays as it is.
printf 'net.ipv4.ip_forward = 1\nnet.bridge.bridge-nf-call-iptables = 1\n' >/etc/sysctl.d/zzz-kubernetes.conf
sysctl --system >/dev/null
