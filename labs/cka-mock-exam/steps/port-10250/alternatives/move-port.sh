#!/usr/bin/env bash
# The agent kept, on another port, by a drop-in.
mkdir -p /etc/systemd/system/legacy-metrics-agent.service.d
printf '[Service]\nExecStart=\nExecStart=/usr/bin/python3 -m http.server 19250 --directory /opt/legacy-agent\n' >/etc/systemd/system/legacy-metrics-agent.service.d/port.conf
systemctl daemon-reload
systemctl restart legacy-metrics-agent.service
for _ in $(seq 1 60); do ss -ltn 'sport = :10250' | grep -q 10250 || break; sleep 0.5; done
