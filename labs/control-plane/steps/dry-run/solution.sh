#!/usr/bin/env bash
set -e
export KUBECONFIG=/etc/kubernetes/admin.conf
kubectl create deployment web --image=nginx:1.27 --replicas=2 -n shop --dry-run=client -o yaml |
  sed 's/^  strategy: {}$/  strategy:\n    type: RollingUpdate\n    rollingUpdate:\n      maxUnavailable: 0\n      maxSurge: 1/' >/root/web.yaml
kubectl apply -f /root/web.yaml
