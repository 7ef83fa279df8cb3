#!/usr/bin/env bash
f=/root/shop.kubeconfig
if [ ! -s "$f" ]; then
  echo "/root/shop.kubeconfig がまだありません。"
  exit 1
fi
server=$(sed -n 's/^[[:space:]]*server:[[:space:]]*//p' "$KUBECONFIG" | head -1)
view=$(kubectl --kubeconfig="$f" config view --minify -o 'jsonpath={.contexts[0].name}|{.contexts[0].context.namespace}|{.clusters[0].cluster.server}' 2>&1)
if [[ $view == error:* ]]; then
  problems+=("shop.kubeconfig の現在のコンテキストが決まっていません(kubectl config use-context): $view")
else
  IFS='|' read -r name ns srv <<<"$view"
  [ "$name" = shop ] || problems+=("現在のコンテキストが shop ではありません(今: ${name:-なし})")
  [ "$ns" = shop ] || problems+=("コンテキスト shop の名前空間が shop ではありません(今: ${ns:-なし})")
  [ "$srv" = "$server" ] || problems+=("クラスターのサーバーが $server ではありません(今: ${srv:-なし})")
fi
can=$(kubectl --kubeconfig="$f" auth can-i list pods 2>&1)
[ "$can" = yes ] || problems+=("shop.kubeconfig で API サーバーに認証できません(kubectl auth can-i list pods: $can)。証明書を --embed-certs で埋め込みましたか")
finish "shop.kubeconfig は、コンテキスト shop(クラスター・ユーザー・名前空間 shop)で API サーバーに届きます。"
