#!/usr/bin/env bash
set -e
systemctl enable --now kubelet
for _ in $(seq 1 60); do
  [ "$(kubectl --kubeconfig=/etc/kubernetes/kubelet.conf get node node02 -o 'jsonpath={.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null)" = True ] && exit 0
  sleep 5
done
exit 1
