#!/usr/bin/env bash
export KUBECONFIG=/etc/kubernetes/admin.conf
cat >/root/bad-backup.yaml <<'YAML'
apiVersion: labdeck.example/v1
kind: Backup
metadata:
  name: weekly
  namespace: shop
spec:
  schedule: "0 3 * * 0"
  retentionDays: 90
YAML
# Expected to fail: the API server rejects the object; its message is the point.
kubectl apply -f /root/bad-backup.yaml >/root/reject.txt 2>&1
cat <<'YAML' | kubectl apply -f -
apiVersion: labdeck.example/v1
kind: Backup
metadata:
  name: nightly
  namespace: shop
spec:
  schedule: "0 2 * * *"
  retentionDays: 7
YAML
