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
