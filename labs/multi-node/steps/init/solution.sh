#!/usr/bin/env bash
set -e
ip=$(awk '!/^#/ && $2 == "controlplane" { print $1; exit }' /etc/hosts)
echo "KUBELET_EXTRA_ARGS=--node-ip=$ip" >/etc/default/kubelet
kubeadm init --apiserver-advertise-address="$ip" --pod-network-cidr=10.244.0.0/16
mkdir -p /root/.kube && cp /etc/kubernetes/admin.conf /root/.kube/config
# For the join steps' solutions only (they run on the workers, which cannot read this machine's
# init output): a join token with a value they know. A learner copies the printed join command.
kubeadm token create labdek.0123456789abcdef --ttl 4h >/dev/null
