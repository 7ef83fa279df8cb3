#!/usr/bin/env bash
ip=$(eth1_of controlplane)
if [ ! -f "$KUBECONFIG" ]; then
  echo "/etc/kubernetes/admin.conf がありません。kubeadm init がまだ終わっていません。"
  exit 1
fi
grep -qs -- "--node-ip=$ip\b" "/etc/default/kubelet" ||
  problems+=("/etc/default/kubelet の KUBELET_EXTRA_ARGS に --node-ip=$ip がありません。kubelet が再起動するたびに、デフォルトのアドレスに戻ってしまいます")
node=$(nodes_table | awk '$1 == "controlplane" { print $2 }')
[ "$node" = "$ip" ] || problems+=("controlplane ノードの InternalIP が $ip ではありません(今: ${node:-ノードがまだ登録されていません})。kubelet に --node-ip を渡して再起動してください")
adv=$(kubectl get endpoints kubernetes -n default -o 'jsonpath={.subsets[0].addresses[0].ip}' 2>/dev/null)
[ "$adv" = "$ip" ] || problems+=("API サーバーが $ip を名乗っていません(今: ${adv:-不明})。kubeadm init に --apiserver-advertise-address=$ip を付けます")
finish "API サーバーも kubelet も eth1 のアドレス $ip を使っています。"
