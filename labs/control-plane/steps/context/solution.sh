#!/usr/bin/env bash
set -e
export KUBECONFIG=/etc/kubernetes/admin.conf
K=/root/shop.kubeconfig
server=$(kubectl config view -o 'jsonpath={.clusters[0].cluster.server}')
rm -f "$K"
kubectl config --kubeconfig=$K set-cluster lab --server="$server" --certificate-authority=/etc/kubernetes/pki/ca.crt --embed-certs=true
kubectl config view --raw -o 'jsonpath={.users[0].user.client-certificate-data}' | base64 -d >/root/admin.crt
kubectl config view --raw -o 'jsonpath={.users[0].user.client-key-data}' | base64 -d >/root/admin.key
kubectl config --kubeconfig=$K set-credentials admin --client-certificate=/root/admin.crt --client-key=/root/admin.key --embed-certs=true
kubectl config --kubeconfig=$K set-context shop --cluster=lab --user=admin --namespace=shop
kubectl config --kubeconfig=$K use-context shop
rm -f /root/admin.crt /root/admin.key
