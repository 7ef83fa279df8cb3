#!/usr/bin/env bash
# Loaded now, nothing for the next boot.
# expect-output: 再起動後: br_netfilter は読み込まれません
modprobe overlay
modprobe br_netfilter
