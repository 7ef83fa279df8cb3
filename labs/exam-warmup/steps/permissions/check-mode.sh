#!/usr/bin/env bash
d=/srv/shared
m=$(stat -c %a "$d" 2>/dev/null)
[ "$m" = 1777 ] || { echo "$d のパーミッションは ${m:-(なし)} です(1777 にします)。"; exit 1; }
echo "$d のパーミッションは 1777 です。"
