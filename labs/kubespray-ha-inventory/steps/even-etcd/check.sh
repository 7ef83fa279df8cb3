#!/usr/bin/env bash
even=/root/ha-even
if [ ! -f "$even/inventory.ini" ]; then
  echo "/root/ha-even/inventory.ini がまだありません。/root/ha を /root/ha-even にコピーして、etcd を 2 台にしてください。"
  exit 1
fi
inv_load "$even/inventory.ini"; inv_load "$HA/inventory.ini"
n=$(inv_members "$even/inventory.ini" | hosts_of etcd | wc -w)
if ((n == 0 || n % 2 == 1)); then problems+=("/root/ha-even のインベントリは etcd が $n 台です。偶数(2 台)にしてください"); fi
orig=$(inv_members "$HA/inventory.ini" | hosts_of etcd | wc -w)
[ "$orig" = 3 ] || problems+=("元の /root/ha のインベントリまで etcd が $orig 台になっています。変えるのは /root/ha-even のコピーだけです")
log=$even/validate.log
if [ ! -s "$log" ]; then
  problems+=("/root/ha-even/validate.log がありません。コピーしたインベントリでも検査を流して保存してください")
elif ! awk '/Stop if even number of etcd hosts/ { t = 1; next } t && /^TASK|^PLAY/ { exit 1 } t && /fatal:/ { f = 1 } END { exit !f }' "$log"; then
  problems+=("/root/ha-even/validate.log に「Stop if even number of etcd hosts」で止まった記録(fatal:)がありません")
fi
finish "etcd を 2 台にすると、kubespray は「Stop if even number of etcd hosts」で止まりました。"
