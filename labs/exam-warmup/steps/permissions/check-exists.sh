#!/usr/bin/env bash
d=/srv/shared
[ -d "$d" ] || { echo "$d がディレクトリとしてありません。"; exit 1; }
echo "$d があります。"
