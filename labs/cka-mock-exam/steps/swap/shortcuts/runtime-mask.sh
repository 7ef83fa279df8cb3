#!/usr/bin/env bash
# swap.target masked under /run only (mask --runtime): gone at boot, and the fstab line stays.
# expect-output: 再起動後: /swapfile が有効に戻ります
# expect-output: /run/systemd/system/swap.target
swapoff -a
systemctl mask --runtime swap.target
