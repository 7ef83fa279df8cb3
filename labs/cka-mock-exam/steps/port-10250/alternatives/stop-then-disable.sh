#!/usr/bin/env bash
# The same as disable --now, in two commands.
systemctl stop legacy-metrics-agent.service
systemctl disable legacy-metrics-agent.service
