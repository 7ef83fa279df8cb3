#!/usr/bin/env bash
f=$HA/api-access.txt
if [ ! -s "$f" ]; then
  echo "/root/ha/api-access.txt がまだありません。"
  exit 1
fi
declare -A want=([loadbalancer_apiserver_localhost]=true [loadbalancer_apiserver_type]=nginx [kube_apiserver_port]=6443)
for key in loadbalancer_apiserver_localhost loadbalancer_apiserver_type kube_apiserver_port; do
  got=$(sed -n "s/^[[:space:]]*$key[[:space:]]*=[[:space:]]*\([^[:space:]#]*\).*/\1/p" "$f" | tail -1 | tr 'A-Z' 'a-z')
  if [ -z "$got" ] || [ "$got" = "?" ]; then
    problems+=("$key の値がありません")
  elif [ "$got" != "${want[$key]}" ]; then
    problems+=("$key の値「$got」は kubespray の既定値ではありません。roles/kubespray-defaults を読み直してください")
  fi
done
finish "外部のロードバランサーがなければ、各ワーカーの nginx が localhost:6443 で受けて全 API サーバーに振り分けます。"
