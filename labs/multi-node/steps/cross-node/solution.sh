#!/usr/bin/env bash
set -e
export KUBECONFIG=/etc/kubernetes/admin.conf
cat <<'YAML' | kubectl apply -f -
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 2
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      topologySpreadConstraints:
      - maxSkew: 1
        topologyKey: kubernetes.io/hostname
        whenUnsatisfiable: ScheduleAnyway
        labelSelector:
          matchLabels: {app: web}
      containers:
      - name: nginx
        image: nginx:1.27
YAML
for _ in 1 2 3 4 5; do
  kubectl rollout status deployment web --timeout=240s
  nodes=$(kubectl get pods -l app=web --field-selector=status.phase=Running -o 'jsonpath={.items[*].spec.nodeName}')
  [[ $nodes == *node01* && $nodes == *node02* ]] && exit 0
  kubectl rollout restart deployment web
done
exit 1
