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
pods=$(web_pods)
if [ -z "$pods" ]; then
  echo "app=web の Pod がありません。Deployment web を作ってください。"
  exit 1
fi
running=$(awk '$4 == "Running"' <<<"$pods")
for n in node01 node02; do
  awk -v n="$n" '$2 == n { f = 1 } END { exit !f }' <<<"$running" ||
    problems+=("$n で動いている web の Pod がありません(kubectl get pods -o wide)。2 台のワーカーに 1 つずつ置いてください")
done
while read -r name node podip _; do
  [ -n "$name" ] && [ "$node" != controlplane ] || continue
  code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 "http://$podip/")
  [ "$code" = 200 ] || problems+=("controlplane から $node の Pod $name($podip)に HTTP が届きません(結果: ${code:-応答なし})。Flannel の --iface と、ノードの InternalIP を見直してください")
done <<<"$running"
finish "controlplane から、node01 と node02 の Pod に eth1 のトンネル経由で届きました。"
