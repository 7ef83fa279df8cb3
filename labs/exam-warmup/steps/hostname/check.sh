#!/usr/bin/env bash
# Compared with the kernel's own name (/proc/sys/kernel/hostname), not a program's answer.
f=/root/hostname.txt
[ -f "$f" ] || { echo "$f がありません。"; exit 1; }
want=$(cat /proc/sys/kernel/hostname)
got=$(tr -d '[:space:]' <"$f")
[ "$got" = "$want" ] || { echo "$f の中身「${got:0:60}」はホスト名と違います。"; exit 1; }
echo "$f にホスト名 $want が書かれています。"
