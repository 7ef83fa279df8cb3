#!/usr/bin/env bash
# A one-node kubeadm cluster for the control-plane lab: API server and kubelet on eth1, Flannel on
# eth1, the control-plane taint removed so the lab's workloads can run on the only node.
set -euo pipefail
if ! command -v kubeadm >/dev/null || [ ! -f /opt/labdeck/kube-flannel.yml ]; then
  echo "このマシンには kubeadm がありません。このラボは k8s-v1.31 イメージで動きます(npm run labdeck -- image build --variant k8s-v1.31)。" >&2
  exit 1
fi
export KUBECONFIG=/etc/kubernetes/admin.conf
ip=$(awk '!/^#/ && $2 == "controlplane" { print $1; exit }' /etc/hosts)
if [ ! -f "$KUBECONFIG" ]; then
  echo "KUBELET_EXTRA_ARGS=--node-ip=$ip" >/etc/default/kubelet
  kubeadm init --apiserver-advertise-address="$ip" --pod-network-cidr=10.244.0.0/16 >/var/log/labdeck-kubeadm-init.log 2>&1 ||
    { tail -20 /var/log/labdeck-kubeadm-init.log >&2; exit 1; }
  sed 's/^\( *\)- --kube-subnet-mgr$/&\n\1- --iface=eth1/' /opt/labdeck/kube-flannel.yml | kubectl apply -f - >/dev/null
  kubectl taint nodes controlplane node-role.kubernetes.io/control-plane:NoSchedule- >/dev/null
fi
mkdir -p /root/.kube && cp "$KUBECONFIG" /root/.kube/config
kubectl wait node/controlplane --for=condition=Ready --timeout=240s >/dev/null
rm -f /root/explore.txt /root/shop.kubeconfig /root/web.yaml /root/bad-backup.yaml /root/reject.txt
