#!/usr/bin/env bash
# One module of the task (overlay), for partial credit; check.sh checks both (labs test). The rules:
# checklib require_modules (and check.sh's notes).
kernel_view_problems /sys/module
require_modules overlay
finish "overlay は読み込まれていて、次の起動でも読み込まれます。"
