#!/usr/bin/env bash
f=$HA/quorum.txt
if [ ! -s "$f" ]; then
  echo "/root/ha/quorum.txt がまだありません。"
  exit 1
fi
for n in 1 2 3 4 5 6 7; do
  q=$((n / 2 + 1)) t=$((n - (n / 2 + 1)))
  row=$(awk -v n="$n" '$1 == n { print $2, $3; exit }' "$f")
  if [ -z "$row" ]; then
    problems+=("メンバー $n の行がありません")
  elif [ "$row" != "$q $t" ]; then
    problems+=("メンバー $n の行が違います(今: $row)。過半数は n // 2 + 1、耐えられる障害の数は n − 過半数 です")
  fi
done
finish "クォーラムの表は正しく計算されています。2 台は 1 台と、4 台は 3 台と、耐えられる数が同じです。"
