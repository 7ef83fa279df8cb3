#!/usr/bin/env bash
node=node02
ip=$(eth1_of "$node")
line=$(nodes_table | awk -v n="$node" '$1 == n')
if [ -z "$line" ]; then
  echo "$node がまだクラスターに参加していません(kubectl get nodes に出てきません)。"
  exit 1
fi
read -r _ internal ready public <<<"$line"
[ "$internal" = "$ip" ] || problems+=("$node の InternalIP が $ip ではありません(今: $internal)。$node の /etc/default/kubelet に --node-ip=$ip を書いて kubelet を再起動してください")
[ "$public" = "$ip" ] || problems+=("Flannel が $node で使っているアドレスが $ip ではありません(今: ${public:-まだ決まっていません})")
[ "$ready" = True ] || problems+=("$node がまだ Ready ではありません")
finish "$node は $ip で参加し、Ready です。"
