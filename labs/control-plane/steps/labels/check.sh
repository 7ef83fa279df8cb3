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
