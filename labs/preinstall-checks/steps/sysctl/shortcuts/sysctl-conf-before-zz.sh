#!/usr/bin/env bash
# /etc/sysctl.conf applied by hand (sysctl -p): 1 now, but at boot it is read as 99-sysctl.conf, before zz-.
# expect-output: 再起動後: net.ipv4.ip_forward は 0 になります
printf 'net.ipv4.ip_forward = 1\nnet.bridge.bridge-nf-call-iptables = 1\n' >>/etc/sysctl.conf
sysctl -p /etc/sysctl.conf >/dev/null
