#!/usr/bin/env bash
crd=backups.labdeck.example
head=$(kubectl get crd "$crd" -o 'jsonpath={.status.conditions[?(@.type=="Established")].status}|{.spec.scope}|{.spec.names.kind}' 2>/dev/null)
if [ -z "$head" ]; then
  echo "CustomResourceDefinition $crd がありません。"
  exit 1
fi
IFS='|' read -r established scope kind <<<"$head"
[ "$established" = True ] || problems+=("$crd がまだ Established ではありません(今: ${established:-不明})")
[ "$scope" = Namespaced ] || problems+=("$crd の scope が Namespaced ではありません(今: $scope)")
[ "$kind" = Backup ] || problems+=("$crd の kind が Backup ではありません(今: $kind)")
schema=$(kubectl get crd "$crd" -o 'jsonpath={.spec.versions[0].schema.openAPIV3Schema.properties.spec.required}|{.spec.versions[0].schema.openAPIV3Schema.properties.spec.properties.schedule.type}|{.spec.versions[0].schema.openAPIV3Schema.properties.spec.properties.retentionDays.type}|{.spec.versions[0].schema.openAPIV3Schema.properties.spec.properties.retentionDays.minimum}|{.spec.versions[0].schema.openAPIV3Schema.properties.spec.properties.retentionDays.maximum}' 2>/dev/null)
IFS='|' read -r required stype rtype min max <<<"$schema"
for field in schedule retentionDays; do
  [[ $required == *"\"$field\""* ]] || problems+=("spec.required に $field がありません(今: ${required:-なし})")
done
[ "$stype" = string ] || problems+=("spec.schedule の type が string ではありません(今: ${stype:-なし})")
[ "$rtype" = integer ] || problems+=("spec.retentionDays の type が integer ではありません(今: ${rtype:-なし})")
[ "$min" = 1 ] && [ "$max" = 30 ] || problems+=("spec.retentionDays に minimum: 1 と maximum: 30 がありません(今: ${min:-なし}〜${max:-なし})")
finish "Backup の API ができました。スキーマは schedule と retentionDays(1〜30)を求めます。"
