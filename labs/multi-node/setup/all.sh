#!/usr/bin/env bash
# Every machine of the multi-node lab: the k8s image must be there, and nothing of a cluster yet.
set -euo pipefail
if ! command -v kubeadm >/dev/null || [ ! -f /opt/labdeck/kube-flannel.yml ]; then
  echo "このマシンには kubeadm がありません。このラボは k8s-v1.31 イメージで動きます(npm run labdeck -- image build --variant k8s-v1.31)。" >&2
  exit 1
fi
rm -f /root/nics.txt /root/after-uncordon.txt /root/kube-flannel.yml
