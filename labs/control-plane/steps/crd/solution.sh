#!/usr/bin/env bash
set -e
export KUBECONFIG=/etc/kubernetes/admin.conf
cat >/root/backup-crd.yaml <<'YAML'
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: backups.labdeck.example
spec:
  group: labdeck.example
  scope: Namespaced
  names: {plural: backups, singular: backup, kind: Backup}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            required: [schedule, retentionDays]
            properties:
              schedule: {type: string}
              retentionDays: {type: integer, minimum: 1, maximum: 30}
YAML
kubectl apply -f /root/backup-crd.yaml
kubectl wait crd/backups.labdeck.example --for=condition=Established --timeout=60s
