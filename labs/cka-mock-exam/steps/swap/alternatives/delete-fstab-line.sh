#!/usr/bin/env bash
# The fstab line deleted instead of commented out.
swapoff -a
sed -i '/\sswap\s/d' /etc/fstab
systemctl daemon-reload
