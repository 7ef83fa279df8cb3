#!/usr/bin/env bash
# The learner's /root/nics.txt against the machine: eth0's address (the same 10.0.2.15 on every
# VM), each machine's eth1 (/etc/hosts, written by the platform) and the default route's NIC.
f=/root/nics.txt
if [ ! -s "$f" ]; then
  echo "/root/nics.txt がまだありません。"
  exit 1
fi
# eth0's global IPv4 address read by key from ip's JSON (ip -j), not by column: an IPv6 or a
# secondary address does not shift it.
eth0=$(ip -j addr show dev eth0 | python3 -c '
import json, sys
print(next((a["local"] for i in json.load(sys.stdin) for a in i.get("addr_info", []) if a.get("family") == "inet" and a.get("scope") == "global"), ""))' 2>/dev/null)
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
