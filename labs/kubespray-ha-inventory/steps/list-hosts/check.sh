#!/usr/bin/env bash
# kubespray's Ansible (the image's venv) first; an inventory Ansible cannot parse is an error, not an empty list.
export PATH=/opt/kubespray-venv/bin:$PATH ANSIBLE_INVENTORY_UNPARSED_FAILED=true ANSIBLE_LOCALHOST_WARNING=false ANSIBLE_NOCOLOR=true
HA=$LABDECK_ROOT/root/ha
# ansible-inventory --list of each inventory file, read once per check (Ansible starts slowly).
declare -A INVENTORY=()
inv_load() { INVENTORY[$1]=$(ansible-inventory -i "$1" --list 2>/dev/null); [ -n "${INVENTORY[$1]}" ]; }
# "group host" for every host of every group, child groups resolved. Usage: inv_load FILE; inv_members FILE
inv_members() {
  printf '%s' "${INVENTORY[$1]:-}" | python3 -c '
import json, sys
d = json.load(sys.stdin)
def members(g, seen):
    if g in seen: return set()
    seen.add(g)
    e = d.get(g, {})
    hs = set(e.get("hosts", []))
    for c in e.get("children", []): hs |= members(c, seen)
    return hs
for g in d:
    if g != "_meta":
        for h in sorted(members(g, set())): print(g, h)
' 2>/dev/null
}
# Hosts of GROUP in the output of inv_members (stdin), space-separated and sorted.
hosts_of() { awk -v g="$1" '$1 == g { print $2 }' | sort | paste -sd" " -; }
# "host value" for every host, VAR from host_vars and group_vars merged ("-" when unset). Usage: host_vars_of FILE VAR
host_vars_of() {
  printf '%s' "${INVENTORY[$1]:-}" | python3 -c '
import json, sys
for host, v in sorted(json.load(sys.stdin).get("_meta", {}).get("hostvars", {}).items()):
    print(host, v.get(sys.argv[1], "-") or "-")
' "$2" 2>/dev/null
}
problems=()
finish() {
  if [ ${#problems[@]} -gt 0 ]; then printf '%s\n' "${problems[@]}"; exit 1; fi
  echo "$1"
}
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
