#!/usr/bin/env bash
set -e
swapoff -a
sed -i '/^[^#].*\sswap\s/ s/^/# /' /etc/fstab
systemctl daemon-reload
