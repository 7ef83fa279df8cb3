#!/usr/bin/env bash
# The line kept with noauto: not activated at boot (nor by swapon -a).
swapoff /swapfile
sed -i 's#^\(/swapfile[[:space:]]\+[^[:space:]]\+[[:space:]]\+swap[[:space:]]\+\)#\1noauto,#' /etc/fstab
systemctl daemon-reload
