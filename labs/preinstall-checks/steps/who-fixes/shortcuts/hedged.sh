#!/usr/bin/env bash
# Both answers to every key, hoping one counts.
# expect-output: に違う答えが 2 つあります
for k in swap modules sysctl-zz-override port-10250; do printf '%s=kubespray\n%s=human\n' "$k" "$k"; done >/root/who-fixes.txt
