#!/usr/bin/env bash
ip=$(eth1_of controlplane)
args=$(kubectl -n kube-flannel get daemonset kube-flannel-ds -o 'jsonpath={.spec.template.spec.containers[0].args}' 2>/dev/null)
if [ -z "$args" ]; then
  problems+=("kube-flannel 名前空間に DaemonSet kube-flannel-ds がありません。Flannel のマニフェストを適用してください")
elif [[ $args != *'"--iface=eth1"'* ]]; then
  problems+=("Flannel のコンテナ引数に --iface=eth1 がありません(今: $args)。このままでは 3 台とも同じ eth0 のアドレスでトンネルを張ろうとします")
fi
read -r _ _ ready public < <(nodes_table | awk '$1 == "controlplane"')
[ "$public" = "$ip" ] || problems+=("Flannel が controlplane で使っているアドレスが $ip ではありません(今: ${public:-まだ決まっていません})。引数を直したら Pod が作り直されるのを待ってください")
[ "$ready" = True ] || problems+=("controlplane ノードがまだ Ready ではありません(kubectl get nodes)")
finish "Flannel は eth1($ip)でトンネルを張り、controlplane は Ready です。"
