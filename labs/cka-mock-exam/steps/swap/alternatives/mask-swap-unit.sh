#!/usr/bin/env bash
# The unit systemd-fstab-generator makes for the line, masked for good.
swapoff -a
systemctl mask "$(systemd-escape -p --suffix=swap /swapfile)"
