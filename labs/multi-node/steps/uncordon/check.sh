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
flag=$(kubectl get node node01 -o 'jsonpath={.spec.unschedulable}' 2>/dev/null)
[ -z "$flag" ] || [ "$flag" = false ] || problems+=("node01 はまだ cordon されたままです(kubectl uncordon node01)")
f=$LABDECK_ROOT/root/after-uncordon.txt
if [ ! -s "$f" ]; then
  problems+=("/root/after-uncordon.txt がありません。uncordon の後に kubectl get pods -l app=web -o wide の出力を保存してください")
elif ! grep -q '^web-' "$f"; then
  problems+=("/root/after-uncordon.txt に web の Pod の行がありません")
fi
finish "node01 は戻りました。web の Pod は node02 にいたままです。スケジューラーが判断するのは新しい Pod を置くときだけだからです。"
