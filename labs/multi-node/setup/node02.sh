#!/usr/bin/env bash
# node02 was built from an older "golden image" whose policy is that no service starts at boot
# unless someone enables it. kubelet is therefore disabled here (the package enabled it on the
# other two). `kubeadm join` will start kubelet and only warn that it is not enabled
# ([WARNING Service-Kubelet]); the node then works until its first reboot, which is the fault
# the last step of the lab has the learner find and fix from inside the node.
set -euo pipefail
systemctl disable --quiet kubelet.service
systemctl stop kubelet.service
