#!/usr/bin/env bash
# The file holds MemTotal in MiB (an integer; rounding either way is accepted), compared with the
# kernel's /proc/meminfo.
kernel_view_problems /proc/meminfo
f=/root/exam/memtotal_mb.txt
kb=$(awk '/^MemTotal:/ {print $2}' /proc/meminfo)
mib=$((kb / 1024))
if [ ! -f "$f" ]; then
  now_problem "$f がありません"
else
  got=$(tr -d '[:space:]' <"$f")
  if ! [[ $got =~ ^[0-9]+$ ]]; then
    now_problem "$f の中身が整数ではありません: ${got:0:40}"
  elif [ "$got" -lt "$mib" ] || [ "$got" -gt $((mib + 1)) ]; then
    now_problem "$f の値 $got は MemTotal(MiB)と合いません"
  fi
fi
finish "MemTotal が MiB で記録されています。"
