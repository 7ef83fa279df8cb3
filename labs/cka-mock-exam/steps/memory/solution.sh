#!/usr/bin/env bash
set -e
mkdir -p /root/exam
awk '/^MemTotal:/ {print int($2 / 1024)}' /proc/meminfo > /root/exam/memtotal_mb.txt
