#!/usr/bin/env bash
m=/etc/kubernetes/manifests
{
  echo "apiserver-port=$(sed -n 's/.*--secure-port=\([0-9]*\).*/\1/p' $m/kube-apiserver.yaml | head -1)"
  echo "etcd-client=$(grep -l -- '--etcd-servers' $m/*.yaml | xargs -n1 basename | sed 's/\.yaml$//' | paste -sd, -)"
  echo "scheduler-bind=$(sed -n 's/.*--bind-address=\([0-9.]*\).*/\1/p' $m/kube-scheduler.yaml | head -1)"
} >/root/explore.txt
