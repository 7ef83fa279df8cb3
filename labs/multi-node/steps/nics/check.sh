#!/usr/bin/env bash
f=/root/nics.txt
if [ ! -s "$f" ]; then
  echo "/root/nics.txt がまだありません。"
  exit 1
fi
eth0=$(ip -4 -o addr show dev eth0 | awk '{ print $4 }' | cut -d/ -f1 | head -1)
default=$(ip -4 route show default | awk '{ for (i = 1; i < NF; i++) if ($i == "dev") { print $(i + 1); exit } }')
for m in controlplane node01 node02; do
  line=$(awk -v m="$m" '$1 == m' "$f" | tail -1)
  if [ -z "$line" ]; then problems+=("$m の行がありません"); continue; fi
  got0=$(sed -n 's/.*eth0=\([0-9.]*\).*/\1/p' <<<"$line")
  got1=$(sed -n 's/.*eth1=\([0-9.]*\).*/\1/p' <<<"$line")
  [ "$got0" = "$eth0" ] || problems+=("$m の eth0 が違います(書かれている値: ${got0:-なし})。ip -4 addr show eth0 をそのマシンで実行してみてください")
  [ "$got1" = "$(eth1_of "$m")" ] || problems+=("$m の eth1 が違います(書かれている値: ${got1:-なし})")
done
got=$(sed -n 's/^[[:space:]]*default[[:space:]]*=[[:space:]]*\([a-z0-9]*\).*/\1/p' "$f" | tail -1)
[ "$got" = "$default" ] || problems+=("default= の行に、デフォルトルートが出ていく NIC の名前を書いてください(書かれている値: ${got:-なし})")
finish "3 台とも eth0 は $eth0、デフォルトルートも $default です。何も指定しなければ、どのコンポーネントもこの同じアドレスを選びます。"
