#!/usr/bin/env bash
# Passes when node02's /root/whoami.txt holds node02's own hostname.
f=/root/whoami.txt
if [ ! -f "$f" ]; then
  echo "node02 に $f がまだありません。node02 のタブで実行しましたか？"
  exit 1
fi
if [ "$(tr -d '[:space:]' < "$f")" != "$(hostname)" ]; then
  echo "$f の中身が node02 のホスト名ではありません: $(head -c 100 "$f")"
  exit 1
fi
echo "$f に $(hostname) と書かれています。"
