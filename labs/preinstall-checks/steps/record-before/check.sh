#!/usr/bin/env bash
# The saved file must hold facts only this machine gives, not plausible hand-typed lines:
#  - swap: a line naming /swapfile with this session's random priority (setup: pri=N in fstab,
#    swapon -p N), as `swapon --show` (PRIO), `swapon -s`, /proc/swaps or the fstab line print it;
#  - port 10250: the listener's PID, as `ss -ltnp` (pid=N on the :10250 line) or
#    `systemctl status` (Main PID: N) print it; checked against the PIDs listening now, if any;
#  - ip_forward: the value before any fix (setup set 0), as `sysctl` or `sysctl -a` print it.
# Accepted: any commands that print these (the step's, or swapon -s / cat /etc/fstab / ss -ltnp /
# sysctl -a | grep forward ...), CRLF line ends. Refused: a typed file with made-up values.
# Diligence, not honesty: every value compared is one root can read (that is the point of the
# step), so a record typed by hand from the machine's own output passes. The priority is taken
# from the kernel (/proc/swaps) or the fstab line, never from a file the setup leaves behind.
f=/root/before.txt
if [ ! -s "$f" ]; then
  echo "$f がまだありません(または空です)。"
  exit 1
fi
text=$(tr -d '\r' <"$f")
# The swap file's priority: the kernel's while it is on, else the fstab line's pri= (even commented).
pri=$(awk '$1 == "/swapfile" { print $5; exit }' /proc/swaps 2>/dev/null)
[ -n "$pri" ] || pri=$(grep -E '^[#[:space:]]*/swapfile[[:space:]]' /etc/fstab 2>/dev/null | grep -oE 'pri=[0-9]+' | head -1 | cut -d= -f2)
swaplines=$(grep '/swapfile' <<<"$text")
if [ -z "$swaplines" ]; then
  problems+=("スワップの記録がありません(swapon --show か fstab の行)")
elif [ -n "$pri" ] && ! grep -qE "(^|[^0-9])$pri([^0-9]|\$)" <<<"$swaplines"; then
  problems+=("スワップの行が、このマシンの出力と合いません(優先度 PRIO / pri= の値)。手で書かずに、コマンドの出力をそのまま保存してください")
fi
pids=$( { grep -E '[:.*]10250[[:space:]]' <<<"$text" | grep -o 'pid=[0-9]\+' | cut -d= -f2
  grep -oE 'Main PID: [0-9]+' <<<"$text" | grep -oE '[0-9]+'; } | sort -u)
if [ -z "$pids" ]; then
  problems+=("ポート 10250 を使っているプロセスの記録がありません(ss -ltnp の :10250 の行、pid= 付き)")
else
  live=$(ss -ltnpH 'sport = :10250' 2>/dev/null | grep -o 'pid=[0-9]\+' | cut -d= -f2 | sort -u)
  if [ -n "$live" ] && [ -z "$(comm -12 <(echo "$pids") <(echo "$live"))" ]; then
    problems+=("記録にある PID($(echo $pids | tr ' ' ','))は、今 10250 を使っているプロセスの PID($(echo $live | tr ' ' ','))と違います。コマンドの出力をそのまま保存してください")
  fi
fi
fwd=$(grep -oE 'net\.ipv4\.ip_forward[[:space:]]*=[[:space:]]*[0-9]+' <<<"$text" | tail -1 | grep -oE '[0-9]+$')
if [ -z "$fwd" ]; then
  problems+=("net.ipv4.ip_forward の値の記録がありません(sysctl net.ipv4.ip_forward)")
elif [ "$fwd" != 0 ]; then
  problems+=("記録の ip_forward は $fwd です。直す前の状態を記録してください")
fi
if [ ${#problems[@]} -gt 0 ]; then
  echo "$f に足りない記録があります:"
  printf ' - %s\n' "${problems[@]}"
  exit 1
fi
echo "直す前の状態が $f に記録されています(スワップの優先度 $pri、10250 の PID $(echo $pids | tr ' ' ','))。"
