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
state=$(systemctl is-active kubelet 2>/dev/null)
[ "$state" = active ] || problems+=("node02 の kubelet が動いていません(状態: ${state:-不明})。systemctl status kubelet と journalctl -u kubelet を見てください")
unit_enabled kubelet || problems+=("node02 の kubelet は enable されていません。今は動いていても、次に再起動するとまた戻ってきません")
ready=$(kubectl --kubeconfig="$LABDECK_ROOT/etc/kubernetes/kubelet.conf" get node node02 -o 'jsonpath={.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null)
[ "$ready" = True ] || problems+=("node02 はまだ Ready ではありません(今: ${ready:-不明})")
finish "node02 の kubelet は動いていて、起動時にも立ち上がります。node02 は Ready です。"
