#!/usr/bin/env bash
mb=$(($(awk '/^MemTotal:/ {print $2}' /proc/meminfo) / 1024))
echo "$mb" > /root/memtotal_mb.txt
if [ "$mb" -ge 1500 ]; then echo OK; else echo NG; fi > /root/memory-verdict.txt
