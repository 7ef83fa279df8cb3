#!/usr/bin/env bash
# Stopped now, still enabled for the next boot.
# expect-output: 再起動後: legacy-metrics-agent.service がまた立ち上がり
systemctl stop legacy-metrics-agent.service
