#!/usr/bin/env bash
systemctl disable --now legacy-metrics-agent.service
