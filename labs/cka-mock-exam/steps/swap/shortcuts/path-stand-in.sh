#!/usr/bin/env bash
# A stand-in `swapon` early on PATH (/usr/local/sbin, writable by root) that reports no swap, the
# fstab line commented out, and the swap left on: the kernel still lists it in /proc/swaps.
# expect-output: 今: スワップが有効です: /swapfile
sed -i '/^[^#].*\sswap\s/ s/^/# /' /etc/fstab
systemctl daemon-reload
printf '#!/bin/sh\nexit 0\n' >/usr/local/sbin/swapon
chmod 755 /usr/local/sbin/swapon
