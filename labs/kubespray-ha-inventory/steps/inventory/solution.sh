#!/usr/bin/env bash
set -e
ha=/root/ha
[ -d "$ha" ] || cp -r "/opt/kubespray/inventory/sample" "$ha"
cat >"$ha/inventory.ini" <<'INI'
[kube_control_plane]
cp1
cp2
cp3

[etcd:children]
kube_control_plane

[kube_node]
wk1
wk2

[k8s_cluster:children]
kube_control_plane
kube_node
INI
