#!/usr/bin/env bash
# The fstab line commented out, but the swap still on now.
# expect-output: 今: スワップが有効です
sed -i '/^[^#].*\sswap\s/ s/^/# /' /etc/fstab
systemctl daemon-reload
