#!/usr/bin/env bash
set -e
export KUBECONFIG=/etc/kubernetes/admin.conf
sed 's/^\( *\)- --kube-subnet-mgr$/&\n\1- --iface=eth1/' /opt/labdeck/kube-flannel.yml >/root/kube-flannel.yml
kubectl apply -f /root/kube-flannel.yml
kubectl -n kube-flannel rollout status daemonset/kube-flannel-ds --timeout=240s
kubectl wait node/controlplane --for=condition=Ready --timeout=240s
