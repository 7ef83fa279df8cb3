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
f=$LABDECK_ROOT/root/nics.txt
if [ ! -s "$f" ]; then
  echo "/root/nics.txt がまだありません。"
  exit 1
fi
eth0=$(ip -4 -o addr show dev eth0 | awk '{ print $4 }' | cut -d/ -f1 | head -1)
default=$(ip -4 route show default | awk '{ for (i = 1; i < NF; i++) if ($i == "dev") { print $(i + 1); exit } }')
for m in controlplane node01 node02; do
  line=$(awk -v m="$m" '$1 == m' "$f" | tail -1)
  if [ -z "$line" ]; then problems+=("$m の行がありません"); continue; fi
  got0=$(sed -n 's/.*eth0=\([0-9.]*\).*/\1/p' <<<"$line")
  got1=$(sed -n 's/.*eth1=\([0-9.]*\).*/\1/p' <<<"$line")
  [ "$got0" = "$eth0" ] || problems+=("$m の eth0 が違います(書かれている値: ${got0:-なし})。ip -4 addr show eth0 をそのマシンで実行してみてください")
  [ "$got1" = "$(eth1_of "$m")" ] || problems+=("$m の eth1 が違います(書かれている値: ${got1:-なし})")
done
got=$(sed -n 's/^[[:space:]]*default[[:space:]]*=[[:space:]]*\([a-z0-9]*\).*/\1/p' "$f" | tail -1)
[ "$got" = "$default" ] || problems+=("default= の行に、デフォルトルートが出ていく NIC の名前を書いてください(書かれている値: ${got:-なし})")
finish "3 台とも eth0 は $eth0、デフォルトルートも $default です。何も指定しなければ、どのコンポーネントもこの同じアドレスを選びます。"
