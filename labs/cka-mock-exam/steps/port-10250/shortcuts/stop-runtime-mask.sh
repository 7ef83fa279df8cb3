#!/usr/bin/env bash
# Stopped, and masked under /run only (or refused: the unit's file is in /etc): the wants link in /etc starts it at boot.
# expect-output: 再起動後: legacy-metrics-agent.service がまた立ち上がり
systemctl stop legacy-metrics-agent.service
systemctl mask --runtime legacy-metrics-agent.service || true
