#!/usr/bin/env bash
# An old monitoring agent serving HTTP on 10250 (kubelet's port), restarted by systemd.
set -euo pipefail
mkdir -p /opt/legacy-agent
echo 'legacy metrics agent v0.9' >/opt/legacy-agent/index.html
cat >/etc/systemd/system/legacy-metrics-agent.service <<'UNIT'
[Unit]
Description=Legacy metrics agent (HTTP on :10250)
After=network.target

[Service]
ExecStart=/usr/bin/python3 -m http.server 10250 --directory /opt/legacy-agent
Restart=always
RestartSec=2

[Install]
WantedBy=multi-user.target
UNIT
systemctl daemon-reload
systemctl enable --now legacy-metrics-agent.service >/dev/null 2>&1
rm -rf /root/exam
for _ in $(seq 1 60); do
  ss -ltn 'sport = :10250' | grep -q 10250 && break
  sleep 0.5
done
ss -ltn 'sport = :10250' | grep -q 10250 || { echo "setup: legacy-metrics-agent is not listening on 10250" >&2; exit 1; }
sync
