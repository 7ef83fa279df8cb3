#!/usr/bin/env bash
# The values in /etc/sysctl.conf (kubespray's file on Ubuntu), the zz- line commented out.
printf 'net.ipv4.ip_forward=1\nnet.bridge.bridge-nf-call-iptables=1\n' >>/etc/sysctl.conf
sed -i 's/^\([[:space:]]*net\.ipv4\.ip_forward\)/# \1/' /etc/sysctl.d/zz-hardening.conf
sysctl --system >/dev/null
