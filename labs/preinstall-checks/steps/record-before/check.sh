#!/usr/bin/env bash
f=/root/before.txt
if [ ! -s "$f" ]; then
  echo "$f がまだありません(または空です)。"
  exit 1
fi
missing=()
grep -q '/swapfile' "$f" || missing+=("スワップ(swapon --show か fstab の行)")
grep -q '10250' "$f" || missing+=("ポート 10250 を使っているプロセス(ss -ltnp)")
grep -q 'ip_forward' "$f" || missing+=("net.ipv4.ip_forward の値(sysctl)")
if [ ${#missing[@]} -gt 0 ]; then
  echo "$f に次の記録が足りません:"
  printf ' - %s\n' "${missing[@]}"
  exit 1
fi
echo "直す前の状態が $f に記録されています。"
