#!/usr/bin/env bash
# Passes when node01 has /root/hello.txt containing こんにちは.
f=/root/hello.txt
if [ ! -f "$f" ]; then
  echo "node01 に $f がまだありません。"
  exit 1
fi
if ! grep -q "こんにちは" "$f"; then
  echo "$f はありますが、「こんにちは」が書かれていません。今の中身: $(head -c 200 "$f")"
  exit 1
fi
echo "$f に「こんにちは」が書かれています。"
