#!/usr/bin/env bash
# Judged by effect, now and at the kubelet's next start:
# - now: the node's InternalIP (any of a dual-stack node's) is eth1's, and the API server
#   advertises eth1's address (kubernetes endpoints).
# - next start: --node-ip=<eth1> on the kubelet's command line as systemd will build it
#   (kubelet_boot_args). Accepted ways: /etc/default/kubelet KUBELET_EXTRA_ARGS; kubeadm's
#   nodeRegistration.kubeletExtraArgs (lands in /var/lib/kubelet/kubeadm-flags.env); a drop-in
#   under /etc/systemd/system/kubelet.service.d/ (Environment= or its own ExecStart=); either
#   spelling --node-ip=IP / --node-ip IP, and a dual-stack list IP,IPv6.
# Refused: an address only on the running kubelet (a drop-in under /run, kubelet started by hand),
#   which the next restart loses.
ip=$(eth1_of controlplane)
if [ ! -f "$KUBECONFIG" ]; then
  echo "/etc/kubernetes/admin.conf がまだありません。kubeadm init がまだ終わっていません。"
  exit 1
fi
boot=$(kubelet_boot_node_ip)
[[ ",$boot," == *",$ip,"* ]] ||
  boot_problem "kubelet が次に起動するときのコマンドラインに --node-ip=$ip がありません(今: ${boot:-なし})。/etc/default/kubelet の KUBELET_EXTRA_ARGS、kubeadm の kubeletExtraArgs、ドロップインのどれかに書かないと、kubelet が再起動するたびにデフォルトのアドレスに戻ってしまいます"
node=$(nodes_table | node_field controlplane 2)
has_address "$node" "$ip" || problems+=("controlplane ノードの InternalIP が $ip ではありません(今: ${node:-ノードがまだ登録されていません})。kubelet に --node-ip を渡して再起動してください")
adv=$(kubectl get endpoints kubernetes -n default -o 'jsonpath={.subsets[0].addresses[0].ip}' 2>/dev/null)
[ "$adv" = "$ip" ] || problems+=("API サーバーが $ip を名乗っていません(今: ${adv:-不明})。kubeadm init に --apiserver-advertise-address=$ip を付けます")
finish "API サーバーも kubelet も eth1 のアドレス $ip を使っています(kubelet は再起動後も)。"
