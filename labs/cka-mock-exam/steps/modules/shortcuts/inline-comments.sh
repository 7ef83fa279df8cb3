#!/usr/bin/env bash
# Looks right, loads nothing at boot: modules-load.d has no inline comments.
# expect-output: 行の途中のコメントは書けません
printf 'overlay       # containerd\nbr_netfilter  # kube-proxy\n' >/etc/modules-load.d/k8s.conf
modprobe overlay
modprobe br_netfilter
