#!/usr/bin/env bash
# Loaded now, and a modules-load.d file that lives in /run (tmpfs): gone at the next boot.
# expect-output: 再起動後: overlay は読み込まれません。/run/modules-load.d/k8s.conf
mkdir -p /run/modules-load.d
printf 'overlay\nbr_netfilter\n' >/run/modules-load.d/k8s.conf
modprobe overlay
modprobe br_netfilter
