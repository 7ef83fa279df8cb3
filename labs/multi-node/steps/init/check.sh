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
if [ ! -f "$KUBECONFIG" ]; then
  echo "/etc/kubernetes/admin.conf がありません。kubeadm init がまだ終わっていません。"
  exit 1
fi
grep -qs -- "--node-ip=$ip\b" "$LABDECK_ROOT/etc/default/kubelet" ||
  problems+=("/etc/default/kubelet の KUBELET_EXTRA_ARGS に --node-ip=$ip がありません。kubelet が再起動するたびに、デフォルトのアドレスに戻ってしまいます")
node=$(nodes_table | awk '$1 == "controlplane" { print $2 }')
[ "$node" = "$ip" ] || problems+=("controlplane ノードの InternalIP が $ip ではありません(今: ${node:-ノードがまだ登録されていません})。kubelet に --node-ip を渡して再起動してください")
adv=$(kubectl get endpoints kubernetes -n default -o 'jsonpath={.subsets[0].addresses[0].ip}' 2>/dev/null)
[ "$adv" = "$ip" ] || problems+=("API サーバーが $ip を名乗っていません(今: ${adv:-不明})。kubeadm init に --apiserver-advertise-address=$ip を付けます")
finish "API サーバーも kubelet も eth1 のアドレス $ip を使っています。"
