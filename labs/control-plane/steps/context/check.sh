#!/usr/bin/env bash
# Judged by what kubectl reads from /root/shop.kubeconfig (config view --minify: the current
# context's name, namespace and cluster server) and by a real request with it (auth can-i), from
# stdout only (split_run): a warning on stderr does not spoil the values. Any way of writing the
# file counts (kubectl config set-* / use-context, by hand, a copy of admin.conf edited).
f=/root/shop.kubeconfig
if [ ! -s "$f" ]; then
  echo "/root/shop.kubeconfig がまだありません。"
  exit 1
fi
server=$(sed -n 's/^[[:space:]]*server:[[:space:]]*//p' "$KUBECONFIG" | head -1)
if ! split_run kubectl --kubeconfig="$f" config view --minify -o 'jsonpath={.contexts[0].name}|{.contexts[0].context.namespace}|{.clusters[0].cluster.server}'; then
  problems+=("shop.kubeconfig の現在のコンテキストが決まっていません(kubectl config use-context): $ERR")
else
  IFS='|' read -r name ns srv <<<"$OUT"
  [ "$name" = shop ] || problems+=("現在のコンテキストが shop ではありません(今: ${name:-なし})")
  [ "$ns" = shop ] || problems+=("コンテキスト shop の名前空間が shop ではありません(今: ${ns:-なし})")
  [ "$srv" = "$server" ] || problems+=("クラスターのサーバーが $server ではありません(今: ${srv:-なし})")
fi
split_run kubectl --kubeconfig="$f" auth can-i list pods
[ "$OUT" = yes ] || problems+=("shop.kubeconfig で API サーバーに認証できません(kubectl auth can-i list pods: ${OUT:-$ERR})。証明書を --embed-certs で埋め込みましたか")
finish "shop.kubeconfig は、コンテキスト shop(クラスター・ユーザー・名前空間 shop)で API サーバーに届きます。"
