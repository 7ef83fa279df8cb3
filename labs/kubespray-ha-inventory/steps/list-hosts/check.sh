#!/usr/bin/env bash
# Judged by the inventory (ansible-inventory: wk3 in kube_node only, its ip from any host_vars form
# or inline) and by the saved --list-hosts outputs, which must name exactly the plays and hosts the
# check's own run of the same command prints (scale.yml --limit wk3; remove-node.yml -e node=wk3).
# Accepted: either flag spelling (--limit wk3 / -l wk3 / --limit=wk3, -e node=wk3 /
# --extra-vars node=wk3 / -e '{"node":"wk3"}'), saved with tee or >, with or without 2>&1.
# Ansible lists a play's hosts in no fixed order: the "play|host" pairs are compared sorted.
# Refused: a hand-typed list (plays or hosts the run does not print), a run without the limit.
inv=$HA/inventory.ini
inv_load "$inv"
members=$(inv_members "$inv")
[[ " $(hosts_of kube_node <<<"$members") " == *" wk3 "* ]] || problems+=("wk3 が kube_node に入っていません")
for g in etcd kube_control_plane; do
  [[ " $(hosts_of "$g" <<<"$members") " != *" wk3 "* ]] || problems+=("wk3 が $g にも入っています。ワーカーとして足すだけです")
done
[ "$(host_vars_of "$inv" ip | awk '$1 == "wk3" { print $2 }')" = 10.20.0.23 ] || problems+=("/root/ha/host_vars/wk3.yml に ip: 10.20.0.23(と ansible_host)がありません")
# "play|host" for every host every play targets, from ansible-playbook --list-hosts output.
targets() {
  awk '/^ *play #[0-9]+ / { p = $0; sub(/^ *play #[0-9]+ \([^)]*\): /, "", p); sub(/\t.*| +TAGS:.*/, "", p); h = 0; next }
       /^ *hosts \([0-9]+\):/ { h = 1; next }
       h && /^      [^ ]/ { print p "|" $1; next }
       { h = 0 }' "$1"
}
scale=$HA/scale-hosts.txt
if [ ! -s "$scale" ] || ! grep -q 'scale.yml' "$scale"; then
  problems+=("/root/ha/scale-hosts.txt に scale.yml の --list-hosts の出力がありません")
else
  others=$(targets "$scale" | cut -d'|' -f2 | grep -vx wk3 | sort -u | paste -sd, -)
  [ -z "$others" ] || problems+=("scale.yml が wk3 以外も対象にしています: $others(--limit wk3 を付けてください)")
  targets "$scale" | grep -q '|wk3$' || problems+=("scale-hosts.txt のどの play も wk3 を対象にしていません")
  [ -n "$others" ] || [ "$(targets "$scale" | sort)" = "$(kubespray_run -i "$inv" scale.yml --limit wk3 --list-hosts | targets /dev/stdin | sort)" ] ||
    problems+=("scale-hosts.txt の play と対象のホストが、今 ansible-playbook scale.yml --limit wk3 --list-hosts が出すものと違います。出力をそのまま保存してください")
fi
remove=$HA/remove-hosts.txt
if [ ! -s "$remove" ] || ! grep -q 'remove-node.yml' "$remove"; then
  problems+=("/root/ha/remove-hosts.txt に remove-node.yml の --list-hosts の出力がありません")
else
  reset=$(targets "$remove" | awk -F'|' '$1 == "Reset node" { print $2 }' | sort -u | paste -sd, -)
  [ "$reset" = wk3 ] || problems+=("remove-node.yml の「Reset node」が wk3 だけを対象にしていません(今: ${reset:-なし})。-e node=wk3 を付けてください")
  [ "$reset" != wk3 ] || [ "$(targets "$remove" | sort)" = "$(kubespray_run -i "$inv" remove-node.yml -e node=wk3 --list-hosts | targets /dev/stdin | sort)" ] ||
    problems+=("remove-hosts.txt の play と対象のホストが、今 ansible-playbook remove-node.yml -e node=wk3 --list-hosts が出すものと違います。出力をそのまま保存してください")
fi
finish "wk3 を足すときは wk3 だけが、消すときもリセットされるのは wk3 だけだと、実行する前に確かめられました。"
