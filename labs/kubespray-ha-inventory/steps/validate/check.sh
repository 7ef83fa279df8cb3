#!/usr/bin/env bash
log=$HA/validate.log
if [ ! -s "$log" ]; then
  echo "/root/ha/validate.log がまだありません。検査の出力を tee で保存してください。"
  exit 1
fi
grep -q 'Stop if even number of etcd hosts' "$log" ||
  problems+=("validate.log に kubespray のインベントリ検査(validate_inventory の「Stop if even number of etcd hosts」)がありません。playbooks/boilerplate.yml を流しましたか")
recap=$(awk '/^PLAY RECAP/ { r = 1; next } r && NF >= 2 && $2 == ":"' "$log")
if [ -z "$recap" ]; then
  problems+=("validate.log に PLAY RECAP がありません。検査が最後まで進んでいません")
else
  bad=$(awk '{ for (i = 3; i <= NF; i++) if ($i ~ /^(failed|unreachable)=[1-9]/) { print $1; next } }' <<<"$recap" | paste -sd, -)
  [ -z "$bad" ] || problems+=("検査に失敗したホストがあります: $bad(validate.log の fatal: の行を読んでください。ssh しようとしたなら -e ansible_connection=local が抜けています)")
fi
changed=$(find "$HA/inventory.ini" "$HA/host_vars" "$HA/group_vars" -newer "$log" -type f 2>/dev/null | head -3 | paste -sd, -)
[ -z "$changed" ] || problems+=("検査の後でインベントリが変わっています($changed)。もう一度検査を流してください")
inv_load "$HA/inventory.ini"
etcd=$(inv_members "$HA/inventory.ini" | hosts_of etcd | wc -w)
((etcd % 2 == 1)) || problems+=("今の /root/ha のインベントリは etcd が $etcd 台(偶数)です。3 台に戻してください")
finish "ssh なしで kubespray のインベントリ検査に通りました(validate.log)。"
