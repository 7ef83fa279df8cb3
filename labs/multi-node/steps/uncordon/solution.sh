#!/usr/bin/env bash
set -e
export KUBECONFIG=/etc/kubernetes/admin.conf
kubectl uncordon node01
kubectl get pods -l app=web -o wide >/root/after-uncordon.txt
