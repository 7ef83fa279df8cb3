#!/usr/bin/env bash
# Checks read the cluster as its admin; the learner's own ~/.kube/config does not matter.
export KUBECONFIG=$LABDECK_ROOT/etc/kubernetes/admin.conf
# One line per node: "name InternalIP Ready-status flannel-public-ip".
NODES_JSONPATH='{range .items[*]}{.metadata.name} {.status.addresses[?(@.type=="InternalIP")].address} {.status.conditions[?(@.type=="Ready")].status} {.metadata.annotations.flannel\.alpha\.coreos\.com/public-ip}{"\n"}{end}'
nodes_table() { kubectl get nodes -o "jsonpath=$NODES_JSONPATH" 2>/dev/null; }
# One line per Pod of the web Deployment: "name node podIP phase".
WEB_JSONPATH='{range .items[*]}{.metadata.name} {.spec.nodeName} {.status.podIP} {.status.phase}{"\n"}{end}'
web_pods() { kubectl get pods -l app=web -o "jsonpath=$WEB_JSONPATH" 2>/dev/null; }
# eth1 address of a lab machine: the platform writes every machine's eth1 address into /etc/hosts.
eth1_of() { awk -v n="$1" '!/^#/ && $2 == n { print $1; exit }' "$LABDECK_ROOT/etc/hosts"; }
problems=()
finish() {
  if [ ${#problems[@]} -gt 0 ]; then printf '%s\n' "${problems[@]}"; exit 1; fi
  echo "$1"
}
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
