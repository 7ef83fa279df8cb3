#!/usr/bin/env bash
# The line's own unit masked under /run only.
# expect-output: 再起動後:
swapoff -a
systemctl mask --runtime swapfile.swap
