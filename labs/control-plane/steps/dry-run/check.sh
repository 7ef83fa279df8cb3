#!/usr/bin/env bash
# Judged by what kubectl makes of /root/web.yaml (create --dry-run=client: kind, name,
# namespace, maxUnavailable, as the API would read them) and by the live Deployment. Any way to
# write the file counts (kubectl create ... -o yaml edited, by hand). Values from stdout only
# (split_run): a warning on stderr does not spoil them.
f=/root/web.yaml
if [ ! -s "$f" ]; then
  echo "/root/web.yaml がまだありません。"
  exit 1
fi
split_run kubectl create --dry-run=client -f "$f" -o 'jsonpath={.kind}/{.metadata.name}/{.metadata.namespace}/{.spec.strategy.rollingUpdate.maxUnavailable}'
IFS=/ read -r kind name ns unavailable <<<"$OUT"
if [ "$kind/$name" != Deployment/web ]; then
  problems+=("/root/web.yaml は Deployment web のマニフェストではありません: $(head -c 200 <<<"${ERR:-$OUT}")")
else
  [ "$ns" = shop ] || problems+=("web.yaml の metadata.namespace が shop ではありません(今: ${ns:-なし})")
  [ "$unavailable" = 0 ] || problems+=("web.yaml に spec.strategy.rollingUpdate.maxUnavailable: 0 がありません(今: ${unavailable:-なし})。kubectl explain deployment.spec.strategy.rollingUpdate で場所を確かめてください")
fi
live=$(kubectl -n shop get deployment web -o 'jsonpath={.spec.replicas}/{.spec.strategy.rollingUpdate.maxUnavailable}/{.spec.template.spec.containers[0].image}' 2>/dev/null)
if [ -z "$live" ]; then
  problems+=("名前空間 shop に Deployment web がありません。web.yaml を kubectl apply -f してください")
else
  IFS=/ read -r replicas live_unavailable image <<<"$live"
  [ "$replicas" = 2 ] || problems+=("Deployment web のレプリカが 2 ではありません(今: $replicas)")
  [ "$live_unavailable" = 0 ] || problems+=("クラスターの Deployment web は maxUnavailable が 0 ではありません(今: $live_unavailable)。直した web.yaml を apply してください")
  [ "$image" = nginx:1.27 ] || problems+=("Deployment web のイメージが nginx:1.27 ではありません(今: $image)")
fi
finish "web.yaml から作った Deployment web は、2 レプリカ・maxUnavailable 0 で動いています。"
