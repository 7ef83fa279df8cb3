#!/usr/bin/env bash
# Checks read the cluster as its admin; the learner's own ~/.kube/config does not matter.
export KUBECONFIG=$LABDECK_ROOT/etc/kubernetes/admin.conf
MANIFESTS=$LABDECK_ROOT/etc/kubernetes/manifests
problems=()
finish() {
  if [ ${#problems[@]} -gt 0 ]; then printf '%s\n' "${problems[@]}"; exit 1; fi
  echo "$1"
}
# The value of KEY in a key=value answer file (last one wins), empty when missing.
answer() { sed -n "s/^[[:space:]]*$2[[:space:]]*=[[:space:]]*\([^[:space:]#]*\).*/\1/p" "$1" 2>/dev/null | tail -1; }
f=$LABDECK_ROOT/root/explore.txt
if [ ! -s "$f" ]; then
  echo "/root/explore.txt がまだありません。"
  exit 1
fi
port=$(sed -n 's/.*--secure-port=\([0-9]*\).*/\1/p' "$MANIFESTS/kube-apiserver.yaml" | head -1)
clients=$(grep -l -- '--etcd-servers' "$MANIFESTS"/*.yaml 2>/dev/null | xargs -rn1 basename | sed 's/\.yaml$//' | sort | paste -sd, -)
bind=$(sed -n 's/.*--bind-address=\([0-9.]*\).*/\1/p' "$MANIFESTS/kube-scheduler.yaml" | head -1)
got=$(answer "$f" apiserver-port)
[ "$got" = "$port" ] || problems+=("apiserver-port が違います(書かれている値: ${got:-なし})。kube-apiserver.yaml の --secure-port を見てください")
got=$(answer "$f" etcd-client | tr -d ' ' | tr ',' '\n' | sort | paste -sd, -)
[ "$got" = "$clients" ] || problems+=("etcd-client が違います(書かれている値: ${got:-なし})。--etcd-servers を持っているのはどのマニフェストでしょうか")
got=$(answer "$f" scheduler-bind)
[ "$got" = "$bind" ] || problems+=("scheduler-bind が違います(書かれている値: ${got:-なし})。kube-scheduler.yaml の --bind-address を見てください")
finish "etcd と話すのは $clients だけです。API サーバーは $port で、スケジューラーは $bind で待ち受けています。"
