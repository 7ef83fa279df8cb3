#!/usr/bin/env bash
# Debian's /etc/modules (read at boot through /etc/modules-load.d/modules.conf).
printf 'overlay\nbr_netfilter\n' >>/etc/modules
modprobe -a overlay br_netfilter
