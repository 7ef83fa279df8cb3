#!/usr/bin/env bash
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
fi
remove=$HA/remove-hosts.txt
if [ ! -s "$remove" ] || ! grep -q 'remove-node.yml' "$remove"; then
  problems+=("/root/ha/remove-hosts.txt に remove-node.yml の --list-hosts の出力がありません")
else
  reset=$(targets "$remove" | awk -F'|' '$1 == "Reset node" { print $2 }' | sort -u | paste -sd, -)
  [ "$reset" = wk3 ] || problems+=("remove-node.yml の「Reset node」が wk3 だけを対象にしていません(今: ${reset:-なし})。-e node=wk3 を付けてください")
fi
finish "wk3 を足すときは wk3 だけが、消すときもリセットされるのは wk3 だけだと、実行する前に確かめられました。"
