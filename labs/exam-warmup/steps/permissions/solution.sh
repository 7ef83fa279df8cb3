#!/usr/bin/env bash
mkdir -p /srv/shared
chmod 1777 /srv/shared
