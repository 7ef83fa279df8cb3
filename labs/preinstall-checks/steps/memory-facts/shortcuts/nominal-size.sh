#!/usr/bin/env bash
# The VM's nominal size guessed (512 MiB), not what the machine reports.
# expect-output: このマシンのメモリ量と合いません
echo 512 >/root/memtotal_mb.txt
echo NG >/root/memory-verdict.txt
