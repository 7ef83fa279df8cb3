#!/usr/bin/env bash
# The fstab line commented out and, with the swap still on, an empty list bind-mounted over
# /proc/swaps: the mount shows in /proc/self/mountinfo, and /proc/meminfo still counts the swap.
# expect-output: /proc/swaps はカーネルの内容ではありません
# expect-output: 今: スワップが有効です(/proc/meminfo の SwapTotal
sed -i '/^[^#].*\sswap\s/ s/^/# /' /etc/fstab
systemctl daemon-reload
printf 'Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n' >/root/.swaps
mount --bind /root/.swaps /proc/swaps
