#!/usr/bin/env bash
set -e
export KUBECONFIG=/etc/kubernetes/admin.conf
kubectl drain node01 --ignore-daemonsets --timeout=240s
kubectl rollout status deployment web --timeout=240s
