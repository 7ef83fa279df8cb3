#!/usr/bin/env bash
set -eu
rm -f /root/hostname.txt
