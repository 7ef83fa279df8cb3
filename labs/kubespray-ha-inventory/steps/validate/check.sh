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
changed=$(find "$HA/inventory.ini" "$HA/host_vars" "$HA/group_vars" -newer "$log" -type f 2>/dev/null | sed "s#^$LABDECK_ROOT##" | head -3 | paste -sd, -)
[ -z "$changed" ] || problems+=("検査の後でインベントリが変わっています($changed)。もう一度検査を流してください")
inv_load "$HA/inventory.ini"
etcd=$(inv_members "$HA/inventory.ini" | hosts_of etcd | wc -w)
((etcd % 2 == 1)) || problems+=("今の /root/ha のインベントリは etcd が $etcd 台(偶数)です。3 台に戻してください")
finish "ssh なしで kubespray のインベントリ検査に通りました(validate.log)。"
