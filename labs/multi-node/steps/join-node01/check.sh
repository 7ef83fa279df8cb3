#!/usr/bin/env bash
# Judged by effect: node01 is registered with eth1's address among its InternalIPs (a dual-stack node
# has two; fields are read by key, not by column), flanneld on it publishes eth1's address
# (annotation flannel.alpha.coreos.com/public-ip), and it is Ready. How the kubelet got --node-ip
# (/etc/default/kubelet, kubeadm join's kubeletExtraArgs / kubeadm-flags.env, a drop-in) is the
# worker's business; this check runs on controlplane and sees the node object.
node=node01
ip=$(eth1_of "$node")
table=$(nodes_table)
if ! awk -F'\t' -v n="$node" '$1 == n { f = 1 } END { exit !f }' <<<"$table"; then
  echo "$node がまだクラスターに参加していません(kubectl get nodes に出てきません)。"
  exit 1
fi
internal=$(node_field "$node" 2 <<<"$table")
public=$(node_field "$node" 4 <<<"$table")
ready=$(node_field "$node" 3 <<<"$table")
has_address "$internal" "$ip" || problems+=("$node の InternalIP が $ip ではありません(今: $internal)。$node の kubelet に --node-ip=$ip を渡して(/etc/default/kubelet の KUBELET_EXTRA_ARGS など)kubelet を再起動してください")
[ "$public" = "$ip" ] || problems+=("Flannel が $node で使っているアドレスが $ip ではありません(今: ${public:-まだ決まっていません})")
[ "$ready" = True ] || problems+=("$node がまだ Ready ではありません")
finish "$node は $ip で参加し、Ready です。"
