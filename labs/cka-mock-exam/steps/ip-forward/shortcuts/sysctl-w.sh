#!/usr/bin/env bash
# True only until the next boot: zz-hardening.conf puts 0 back at boot.
# expect-output: 起動時に 0
sysctl -q -w net.ipv4.ip_forward=1
