#!/usr/bin/env bash
# Start from a clean home: no answer file yet.
set -eu
rm -f /root/hello.txt
