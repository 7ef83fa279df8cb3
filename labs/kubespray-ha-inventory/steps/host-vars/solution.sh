#!/usr/bin/env bash
set -e
ha=/root/ha
mkdir -p "$ha/host_vars"
for pair in cp1:11 cp2:12 cp3:13 wk1:21 wk2:22; do
  printf 'ansible_host: 10.20.0.%s\nip: 10.20.0.%s\n' "${pair#*:}" "${pair#*:}" >"$ha/host_vars/${pair%%:*}.yml"
done
