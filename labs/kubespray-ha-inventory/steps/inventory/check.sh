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
if [ ! -f "$inv" ]; then
  echo "/root/ha/inventory.ini がまだありません。kubespray のサンプル(/opt/kubespray/inventory/sample)を /root/ha にコピーしてから書き換えてください。"
  exit 1
fi
[ -f "$HA/group_vars/all/all.yml" ] || problems+=("/root/ha/group_vars/all/all.yml がありません。サンプルの group_vars も一緒にコピーしてください(変数の既定値が入っています)。")
if ! inv_load "$inv" || ! members=$(inv_members "$inv") || [ -z "$members" ]; then
  echo "ansible-inventory が /root/ha/inventory.ini を読めません。次で原因を確かめてください: ansible-inventory -i /root/ha/inventory.ini --graph"
  exit 1
fi
cps=$(hosts_of kube_control_plane <<<"$members")
etcd=$(hosts_of etcd <<<"$members")
workers=$(hosts_of kube_node <<<"$members")
cluster=$(hosts_of k8s_cluster <<<"$members")
[ "$cps" = "cp1 cp2 cp3" ] || problems+=("kube_control_plane は cp1 cp2 cp3 の 3 台にしてください(今: ${cps:-なし})")
[ "$etcd" = "cp1 cp2 cp3" ] || problems+=("etcd はコントロールプレーンと同じ 3 台(stacked)にしてください。[etcd:children] に kube_control_plane を書きます(今: ${etcd:-なし})")
[ "$workers" = "wk1 wk2" ] || problems+=("kube_node は wk1 wk2 の 2 台にしてください(今: ${workers:-なし})")
for h in cp1 cp2 cp3 wk1 wk2; do
  [[ " $cluster " == *" $h "* ]] || { problems+=("k8s_cluster に $h が入っていません([k8s_cluster:children] に kube_control_plane と kube_node を書きます)"); break; }
done
finish "インベントリは コントロールプレーン 3 台(etcd と同居)・ワーカー 2 台 になっています。"
