#!/usr/bin/env bash
# Judged by what Ansible resolves for each host (ansible-inventory --list, _meta.hostvars), so every
# place Ansible reads host variables from counts: host_vars/<h>.yml, host_vars/<h>.yaml,
# host_vars/<h>.json, a host_vars/<h>/ directory of files, inline `cp1 ansible_host=… ip=…` in
# inventory.ini (or an inventory in YAML). A value per host: one in group_vars cannot fit all five.
inv=$HA/inventory.ini
inv_load "$inv"
ansible_hosts=$(host_vars_of "$inv" ansible_host)
ips=$(host_vars_of "$inv" ip)
declare -A want=([cp1]=10.20.0.11 [cp2]=10.20.0.12 [cp3]=10.20.0.13 [wk1]=10.20.0.21 [wk2]=10.20.0.22)
for h in cp1 cp2 cp3 wk1 wk2; do
  ah=$(awk -v h="$h" '$1 == h && $2 != "-" { print $2 }' <<<"$ansible_hosts")
  ip=$(awk -v h="$h" '$1 == h && $2 != "-" { print $2 }' <<<"$ips")
  [ "$ah" = "${want[$h]}" ] || problems+=("$h の ansible_host が ${want[$h]} ではありません(今: ${ah:-未設定})。/root/ha/host_vars/$h.yml に書きます")
  [ "$ip" = "${want[$h]}" ] || problems+=("$h の ip が ${want[$h]} ではありません(今: ${ip:-未設定})。ip を書かないと、kubespray は既定ルートのアドレスに API サーバーと etcd を結び付けます")
done
finish "5 台すべてに ansible_host と ip が入っています(ansible-inventory が読んだ値)。"
