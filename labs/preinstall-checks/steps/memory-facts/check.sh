#!/usr/bin/env bash
# The value must be this machine's ansible_memtotal_mb (MemTotal / 1024, within 2 %: free -m or
# free -h read to the megabyte or so, not a guess from the VM's nominal size), the verdict the
# comparison with 1500 MB.
# Read leniently (checklib answer_lines): a bare number, "1967 MB", ansible's output or JSON with
# the one number in it, full-width digits from an IME, comments, CRLF; OK / ok / ＯＫ.
# Refused: a file with several different numbers (which one was meant?), a wrong verdict.
if [ -n "$(kernel_view_covered /proc/meminfo)" ]; then
  echo "/proc/meminfo はカーネルの内容ではありません(上に別のものがマウントされています。umount してください)。"
  exit 1
fi
total_mb=$(($(awk '/^MemTotal:/ {print $2}' /proc/meminfo) / 1024))
f=/root/memtotal_mb.txt
v=/root/memory-verdict.txt
if [ ! -s "$f" ]; then
  echo "$f がまだありません。"
  exit 1
fi
numbers=$(answer_lines "$f" | grep -oE '[0-9]+(\.[0-9]+)?' | sort -u)
if [ -z "$numbers" ]; then
  echo "$f に数値が書かれていません。"
  exit 1
fi
if [ "$(echo "$numbers" | wc -l)" -gt 1 ]; then
  echo "$f に数値がいくつもあります($(echo $numbers | tr ' ' ',')): ansible_memtotal_mb の値だけを書いてください。"
  exit 1
fi
n=${numbers%%.*}
diff=$((n > total_mb ? n - total_mb : total_mb - n))
if [ $((diff * 100)) -gt $((total_mb * 2)) ]; then
  echo "$f の値($n MB)が、このマシンのメモリ量と合いません。ansible_memtotal_mb か free -m の total を確かめてください。"
  exit 1
fi
if [ ! -s "$v" ]; then
  echo "$v がまだありません。"
  exit 1
fi
expected=ng
[ "$total_mb" -ge 1500 ] && expected=ok
verdict=$(answer_lines "$v" | sed 's/[ .!。]//g' | tail -1)
case $verdict in
  ok | ng) ;;
  *) echo "$v には OK か NG のどちらかを書いてください(今は「$verdict」)。"; exit 1 ;;
esac
if [ "$verdict" != "$expected" ]; then
  echo "$v の判定を見直してください。レッスンの「kubespray 自身の事前チェック」: $n MB を 1500 MB と比べるとどうでしょうか。"
  exit 1
fi
echo "メモリは $total_mb MB で、判定は ${expected^^} です。"
[ "$expected" = ng ] && echo "このまま kubespray を実行すると、0040-verify-settings.yml で止まります。"
exit 0
