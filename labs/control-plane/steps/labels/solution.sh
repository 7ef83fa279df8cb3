#!/usr/bin/env bash
set -e
export KUBECONFIG=/etc/kubernetes/admin.conf
kubectl create namespace shop --dry-run=client -o yaml | kubectl apply -f -
kubectl label namespace shop team=payments env=staging --overwrite
kubectl annotate namespace shop contact=payments-oncall@example.com --overwrite
