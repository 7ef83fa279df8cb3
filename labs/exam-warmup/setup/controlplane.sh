#!/usr/bin/env bash
set -eu
rm -rf /srv/shared
