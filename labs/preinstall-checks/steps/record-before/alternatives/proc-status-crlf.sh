#!/usr/bin/env bash
# /proc/swaps and systemctl status (Main PID), saved with CRLF line ends (as a Windows editor would).
{ cat /proc/swaps; systemctl status legacy-metrics-agent.service --no-pager; sysctl net.ipv4.ip_forward; } 2>&1 | sed 's/$/\r/' >/root/before.txt
