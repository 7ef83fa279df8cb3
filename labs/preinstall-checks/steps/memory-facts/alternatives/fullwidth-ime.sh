#!/usr/bin/env bash
# Typed with a Japanese IME: full-width digits and letters, a unit, a comment line.
mb=$(($(awk '/^MemTotal:/ {print $2}' /proc/meminfo) / 1024))
fw=$(echo "$mb" | sed 'y/0123456789/０１２３４５６７８９/')
printf '# free -m の total\n%s MB\n' "$fw" >/root/memtotal_mb.txt
printf 'ＮＧ。\n' >/root/memory-verdict.txt
