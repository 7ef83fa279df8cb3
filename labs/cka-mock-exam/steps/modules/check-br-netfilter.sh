#!/usr/bin/env bash
# One module of the task (br_netfilter), for partial credit; check.sh checks both (labs test). The rules:
# checklib require_modules (and check.sh's notes).
kernel_view_problems /sys/module
require_modules br_netfilter
finish "br_netfilter は読み込まれていて、次の起動でも読み込まれます。"
