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
f=$HA/api-access.txt
if [ ! -s "$f" ]; then
  echo "/root/ha/api-access.txt がまだありません。"
  exit 1
fi
declare -A want=([loadbalancer_apiserver_localhost]=true [loadbalancer_apiserver_type]=nginx [kube_apiserver_port]=6443)
for key in loadbalancer_apiserver_localhost loadbalancer_apiserver_type kube_apiserver_port; do
  got=$(sed -n "s/^[[:space:]]*$key[[:space:]]*=[[:space:]]*\([^[:space:]#]*\).*/\1/p" "$f" | tail -1 | tr 'A-Z' 'a-z')
  if [ -z "$got" ] || [ "$got" = "?" ]; then
    problems+=("$key の値がありません")
  elif [ "$got" != "${want[$key]}" ]; then
    problems+=("$key の値「$got」は kubespray の既定値ではありません。roles/kubespray-defaults を読み直してください")
  fi
done
finish "外部のロードバランサーがなければ、各ワーカーの nginx が localhost:6443 で受けて全 API サーバーに振り分けます。"
