#!/usr/bin/env bash
# Judged by effect: the address flanneld chose on controlplane, which it publishes in the node's
# annotation flannel.alpha.coreos.com/public-ip, is eth1's; the DaemonSet exists; the node is
# Ready. Any way to make flanneld pick eth1 is accepted: --iface=eth1, "--iface","eth1",
# --iface=192.168.56.10, --iface-regex, --iface-can-reach, the FLANNELD_IFACE env var. The
# DaemonSet's arguments are only quoted as a hint when the annotation is wrong.
ip=$(eth1_of controlplane)
args=$(kubectl -n kube-flannel get daemonset kube-flannel-ds -o 'jsonpath={.spec.template.spec.containers[0].args}' 2>/dev/null)
[ -n "$args" ] || problems+=("kube-flannel 名前空間に DaemonSet kube-flannel-ds がありません。Flannel のマニフェストを適用してください")
table=$(nodes_table)
public=$(node_field controlplane 4 <<<"$table")
ready=$(node_field controlplane 3 <<<"$table")
[ -z "$args" ] || [ "$public" = "$ip" ] ||
  problems+=("Flannel が controlplane で使っているアドレスが $ip ではありません(今: ${public:-まだ決まっていません}、ノードの注釈 flannel.alpha.coreos.com/public-ip)。このままでは 3 台とも同じ eth0 のアドレスでトンネルを張ろうとします。コンテナ引数(今: $args)で eth1 を選ばせ、Pod が作り直されるのを待ってください")
[ "$ready" = True ] || problems+=("controlplane ノードがまだ Ready ではありません(kubectl get nodes)")
finish "Flannel は eth1($ip)でトンネルを張り、controlplane は Ready です。"
