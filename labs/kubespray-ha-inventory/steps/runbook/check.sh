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
f=$HA/runbook.md
if [ ! -s "$f" ]; then
  echo "/root/ha/runbook.md がまだありません。"
  exit 1
fi
# First line number matching the regex $1 and not $2.
line_of() { grep -nE -e "$1" "$f" | grep -vE -e "${2:-^$}" | head -1 | cut -d: -f1; }
facts=$(line_of 'facts\.yml' '--limit')
scale=$(line_of 'scale\.yml.*--limit[= ]wk3')
remove=$(line_of 'remove-node\.yml.*node=wk3')
[ -n "$facts" ] || problems+=("playbooks/facts.yml を --limit なしで流す行がありません(ファクトのキャッシュを新しくするため)")
[ -n "$scale" ] || problems+=("scale.yml を --limit wk3 で流す行がありません")
if [ -n "$facts" ] && [ -n "$scale" ] && ((facts > scale)); then problems+=("facts.yml は scale.yml より前に流します(今は後ろに書かれています)"); fi
[ -n "$remove" ] || problems+=("remove-node.yml を -e node=wk3 で流す行がありません")
for n in "$scale" "$remove"; do
  [ -z "$n" ] || sed -n "${n}p" "$f" | grep -q 'inventory.ini' || problems+=("$(sed -n "${n}p" "$f" | head -c 60)… に -i /root/ha/inventory.ini がありません")
done
if [ -n "$remove" ] && ! tail -n +"$((remove + 1))" "$f" | grep -qE 'inventory\.ini|インベントリ'; then
  problems+=("remove-node.yml の後に、wk3 をインベントリから消す手順がありません")
fi
finish "ランブックには、facts.yml → scale.yml --limit wk3、remove-node.yml -e node=wk3 → インベントリから削除、の順で手順が書かれています。"
