#!/usr/bin/env bash
# free -m pasted whole: many numbers, no answer.
# expect-output: 数値がいくつもあります
free -m >/root/memtotal_mb.txt
echo NG >/root/memory-verdict.txt
