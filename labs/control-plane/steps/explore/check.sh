#!/usr/bin/env bash
f=/root/explore.txt
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
