#!/usr/bin/env bash
# Right for the next boot, not loaded now.
# expect-output: 今: overlay が読み込まれていません
printf 'overlay\nbr_netfilter\n' >/etc/modules-load.d/k8s.conf
