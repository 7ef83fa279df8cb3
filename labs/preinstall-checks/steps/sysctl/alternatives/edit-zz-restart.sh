#!/usr/bin/env bash
# The zz- line changed to 1, the bridge key left at the kernel's default (1 once br_netfilter loads),
# applied by systemd-sysctl itself.
sed -i 's/^\([[:space:]]*net\.ipv4\.ip_forward[[:space:]]*=[[:space:]]*\)0/\11/' /etc/sysctl.d/zz-hardening.conf
systemctl restart systemd-sysctl.service
