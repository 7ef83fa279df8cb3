#!/usr/bin/env bash
# The agent retired: stopped and its unit file deleted (the wants link is left dangling).
systemctl stop legacy-metrics-agent.service
rm /etc/systemd/system/legacy-metrics-agent.service
systemctl daemon-reload
