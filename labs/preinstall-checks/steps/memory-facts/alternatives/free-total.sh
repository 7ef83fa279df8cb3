#!/usr/bin/env bash
# free -m's total column, and a verdict with a reason in a comment.
free -m | awk '/^Mem:/ {print $2}' >/root/memtotal_mb.txt
echo 'NG  # 1500 MB に足りない' >/root/memory-verdict.txt
