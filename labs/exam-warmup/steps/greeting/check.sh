#!/usr/bin/env bash
f=/root/greeting.txt
[ -f "$f" ] || { echo "$f がありません。"; exit 1; }
grep -q "こんにちは" "$f" || { echo "$f に「こんにちは」が書かれていません。"; exit 1; }
echo "$f に「こんにちは」が書かれています。"
