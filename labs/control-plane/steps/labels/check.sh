#!/usr/bin/env bash
out=$(kubectl get namespace shop -o 'jsonpath={.metadata.labels.team}|{.metadata.labels.env}|{.metadata.annotations.contact}' 2>/dev/null)
if [ -z "$out" ]; then
  echo "名前空間 shop がありません。"
  exit 1
fi
IFS='|' read -r team env contact <<<"$out"
[ "$team" = payments ] || problems+=("名前空間 shop にラベル team=payments がありません(今: ${team:-なし})")
[ "$env" = staging ] || problems+=("名前空間 shop にラベル env=staging がありません(今: ${env:-なし})")
[ "$contact" = payments-oncall@example.com ] || problems+=("名前空間 shop にアノテーション contact=payments-oncall@example.com がありません(今: ${contact:-なし})")
finish "名前空間 shop に、選ぶためのラベル(team, env)と、読むためのアノテーション(contact)が付いています。"
