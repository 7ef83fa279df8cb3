#!/usr/bin/env bash
# Plausible lines typed from the lesson, without looking at the machine: the priority and PID are made up.
# expect-output: スワップの行が、このマシンの出力と合いません
cat >/root/before.txt <<'TXT'
NAME      TYPE SIZE USED PRIO
/swapfile file 128M   0B   -2
/swapfile none swap sw 0 0
net.ipv4.ip_forward = 0
State  Recv-Q Send-Q Local Address:Port  Peer Address:Port Process
LISTEN 0      5            0.0.0.0:10250      0.0.0.0:*     users:(("python3",pid=1,fd=3))
TXT
