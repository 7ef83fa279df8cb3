#!/usr/bin/env bash
e0=$(ip -4 -o addr show dev eth0 | awk '{ print $4 }' | cut -d/ -f1 | head -1)
{
  for m in controlplane node01 node02; do echo "$m eth0=$e0 eth1=$(awk -v m="$m" '!/^#/ && $2 == m { print $1; exit }' /etc/hosts)"; done
  echo "default=$(ip -4 route show default | awk '{ for (i = 1; i < NF; i++) if ($i == "dev") { print $(i + 1); exit } }')"
} >/root/nics.txt
