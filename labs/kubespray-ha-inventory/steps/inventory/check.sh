#!/usr/bin/env bash
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
