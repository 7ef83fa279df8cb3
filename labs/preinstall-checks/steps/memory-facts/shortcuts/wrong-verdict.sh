#!/usr/bin/env bash
# The right number, the wrong conclusion.
# expect-output: 判定を見直してください
echo $(($(awk '/^MemTotal:/ {print $2}' /proc/meminfo) / 1024)) >/root/memtotal_mb.txt
echo OK >/root/memory-verdict.txt
