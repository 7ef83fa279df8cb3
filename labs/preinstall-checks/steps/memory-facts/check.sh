#!/usr/bin/env bash
total_mb=$(($(awk '/^MemTotal:/ {print $2}' /proc/meminfo) / 1024))
f=/root/memtotal_mb.txt
v=/root/memory-verdict.txt
if [ ! -s "$f" ]; then
  echo "$f がまだありません。"
  exit 1
fi
n=$(tr -dc '0-9' <"$f")
if [ -z "$n" ]; then
  echo "$f に数値が書かれていません。"
  exit 1
fi
diff=$((n > total_mb ? n - total_mb : total_mb - n))
if [ $((diff * 100)) -gt $((total_mb * 5)) ]; then
  echo "$f の値($n MB)が、このマシンのメモリ量と合いません。ansible_memtotal_mb か free -m の total を確かめてください。"
  exit 1
fi
if [ ! -s "$v" ]; then
  echo "$v がまだありません。"
  exit 1
fi
expected=NG
[ "$total_mb" -ge 1500 ] && expected=OK
verdict=$(tr -d '[:space:]' <"$v" | tr '[:lower:]' '[:upper:]')
if [ "$verdict" != "$expected" ]; then
  echo "$v の判定($verdict)を見直してください。1500 MB と比べるとどうでしょうか。"
  exit 1
fi
echo "メモリは $total_mb MB で、判定は $expected です。"
[ "$expected" = NG ] && echo "このまま kubespray を実行すると、0040-verify-settings.yml で止まります。"
exit 0
