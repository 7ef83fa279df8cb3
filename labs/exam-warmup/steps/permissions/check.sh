#!/usr/bin/env bash
d=/srv/shared
[ -d "$d" ] || { echo "$d がディレクトリとしてありません。"; exit 1; }
m=$(stat -c %a "$d")
[ "$m" = 1777 ] || { echo "$d のパーミッションは $m です(1777 にします)。"; exit 1; }
echo "$d があり、パーミッションは 1777 です。"
