#!/usr/bin/env bash
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
