#!/usr/bin/env bash
# Disabled for the next boot, still serving 10250 now.
# expect-output: 今: 10250 で待ち受けているプロセスがあります
systemctl disable legacy-metrics-agent.service
