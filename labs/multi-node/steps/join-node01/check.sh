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
node=node01
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
