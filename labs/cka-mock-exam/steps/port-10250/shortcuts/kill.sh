#!/usr/bin/env bash
# The process killed: Restart=always starts it again in about 2 s.
# expect-output: 今:
kill "$(systemctl show -p MainPID --value legacy-metrics-agent.service)"
