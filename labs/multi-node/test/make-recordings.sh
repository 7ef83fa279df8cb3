#!/usr/bin/env bash
# Writes test/recorded/*: the states of this lab a learner passes through, as the outputs the
# commands its checks call would print (kubectl, systemctl, ip, curl formats). Written by hand from
# those formats, not captured: this workplace cannot run Kubernetes (see README.md).
set -euo pipefail
D=$(cd "$(dirname "$0")" && pwd)/recorded
rm -rf "$D"; mkdir -p "$D"
NODES='{range .items[*]}{.metadata.name}{"\t"}{.status.addresses[?(@.type=="InternalIP")].address}{"\t"}{.status.conditions[?(@.type=="Ready")].status}{"\t"}{.metadata.annotations.flannel\.alpha\.coreos\.com/public-ip}{"\n"}{end}'
WEB='{range .items[*]}{.metadata.name} {.spec.nodeName} {.status.podIP} {.status.phase}{"\n"}{end}'
state() { S=$D/$1; mkdir -p "$S/fs/etc" "$S/fs/root"; : >"$S/commands.txt"; hosts; }
rec() { local rc=$1; shift; if [ "$rc" = 0 ]; then echo "### $*"; else echo "### rc=$rc $*"; fi >>"$S/commands.txt"; cat >>"$S/commands.txt"; }
hosts() { printf '127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\nff02::1\tip6-allnodes\nff02::2\tip6-allrouters\n\n# Lab machines (eth1), written by Labdeck at first boot\n192.168.56.10\tcontrolplane\n192.168.56.11\tnode01\n192.168.56.12\tnode02\n' >"$S/fs/etc/hosts"; }
admin() { mkdir -p "$S/fs/etc/kubernetes"; cat >"$S/fs/etc/kubernetes/admin.conf" <<'K'
# Recorded /etc/kubernetes/admin.conf with its certificate and key data removed.
apiVersion: v1
kind: Config
clusters:
- cluster:
    certificate-authority-data: REMOVED
    server: https://192.168.56.10:6443
  name: kubernetes
contexts:
- context:
    cluster: kubernetes
    user: kubernetes-admin
  name: kubernetes-admin@kubernetes
current-context: kubernetes-admin@kubernetes
users:
- name: kubernetes-admin
  user:
    client-certificate-data: REMOVED
    client-key-data: REMOVED
K
kubeadm_unit; flags_env ''; default_kubelet '--node-ip=192.168.56.10'; }
# kubelet as the pkgs.k8s.io packages install it: the unit, kubeadm's drop-in 10-kubeadm.conf (which
# reads kubeadm-flags.env, then /etc/default/kubelet), and the package's /etc/default/kubelet.
kubeadm_unit() {
  kubelet_unit; mkdir -p "$S/fs/usr/lib/systemd/system/kubelet.service.d"
  cat >"$S/fs/usr/lib/systemd/system/kubelet.service.d/10-kubeadm.conf" <<'U'
# Note: This dropin only works with kubeadm and kubelet v1.11+
[Service]
Environment="KUBELET_KUBECONFIG_ARGS=--bootstrap-kubeconfig=/etc/kubernetes/bootstrap-kubelet.conf --kubeconfig=/etc/kubernetes/kubelet.conf"
Environment="KUBELET_CONFIG_ARGS=--config=/var/lib/kubelet/config.yaml"
# This is a file that "kubeadm init" and "kubeadm join" generates at runtime, populating the KUBELET_KUBEADM_ARGS variable dynamically
EnvironmentFile=-/var/lib/kubelet/kubeadm-flags.env
# This is a file that the user can use for overrides of the kubelet args as a last resort. Preferably, the user should use
# the .NodeRegistration.KubeletExtraArgs object in the configuration files instead. KUBELET_EXTRA_ARGS should be sourced from this file.
EnvironmentFile=-/etc/default/kubelet
ExecStart=
ExecStart=/usr/bin/kubelet $KUBELET_KUBECONFIG_ARGS $KUBELET_CONFIG_ARGS $KUBELET_KUBEADM_ARGS $KUBELET_EXTRA_ARGS
U
}
# /var/lib/kubelet/kubeadm-flags.env as kubeadm writes it; $1: extra flags (kubeletExtraArgs).
flags_env() { mkdir -p "$S/fs/var/lib/kubelet"; echo "KUBELET_KUBEADM_ARGS=\"--container-runtime-endpoint=unix:///var/run/containerd/containerd.sock ${1:+$1 }--pod-infra-container-image=registry.k8s.io/pause:3.10\"" >"$S/fs/var/lib/kubelet/kubeadm-flags.env"; }
default_kubelet() { mkdir -p "$S/fs/etc/default"; echo "KUBELET_EXTRA_ARGS=$1" >"$S/fs/etc/default/kubelet"; }
ipcmds() {
  # ip -j addr of a dual-stack eth0: the IPv6 link-local address comes after the IPv4 one.
  rec 0 ip -j addr show dev eth0 <<<'[{"ifindex":2,"ifname":"eth0","flags":["BROADCAST","MULTICAST","UP","LOWER_UP"],"mtu":1500,"qdisc":"fq_codel","operstate":"UP","group":"default","txqlen":1000,"link_type":"ether","address":"52:54:00:12:34:56","broadcast":"ff:ff:ff:ff:ff:ff","addr_info":[{"family":"inet","local":"10.0.2.15","prefixlen":24,"metric":1024,"broadcast":"10.0.2.255","scope":"global","dynamic":true,"label":"eth0","valid_life_time":86153,"preferred_life_time":86153},{"family":"inet6","local":"fe80::5054:ff:fe12:3456","prefixlen":64,"scope":"link","valid_life_time":4294967295,"preferred_life_time":4294967295}]}]'
  rec 0 ip -4 route show default <<<'default via 10.0.2.2 dev eth0 proto dhcp src 10.0.2.15 metric 1024 '
}
nics() { printf 'controlplane eth0=10.0.2.15 eth1=192.168.56.10\nnode01 eth0=10.0.2.15 eth1=192.168.56.11\nnode02 eth0=10.0.2.15 eth1=192.168.56.12\ndefault=eth0\n' >"$S/fs/root/nics.txt"; }
endpoints() { rec 0 kubectl get endpoints kubernetes -n default -o 'jsonpath={.subsets[0].addresses[0].ip}' <<<'192.168.56.10'; }
ds_ok() { rec 0 kubectl -n kube-flannel get daemonset kube-flannel-ds -o 'jsonpath={.spec.template.spec.containers[0].args}' <<<'["--ip-masq","--kube-subnet-mgr","--iface=eth1"]'; }
# Node rows written with "|" between fields (a space inside a field: a dual-stack node's two
# InternalIPs, as jsonpath joins them); recorded with TABs, as the jsonpath above prints them.
nodes() { tr '|' '\t' | rec 0 kubectl get nodes -o "jsonpath=$NODES"; }
# kubelet's unit as the Debian package installs it; enabled = the wants link `systemctl enable` makes in
# /etc (checklib reads unit files, not systemctl's answer); --runtime puts the link under /run instead.
kubelet_unit() { mkdir -p "$S/fs/usr/lib/systemd/system"; printf '[Unit]\nDescription=kubelet: The Kubernetes Node Agent\n\n[Service]\nExecStart=/usr/bin/kubelet\nRestart=always\n\n[Install]\nWantedBy=multi-user.target\n' >"$S/fs/usr/lib/systemd/system/kubelet.service"; }
kubelet_enabled() { mkdir -p "$S/fs/${1:-etc}/systemd/system/multi-user.target.wants"; ln -s /usr/lib/systemd/system/kubelet.service "$S/fs/${1:-etc}/systemd/system/multi-user.target.wants/kubelet.service"; }

state 00-setup

state 01-nics; nics; ipcmds

state 02-init; nics; admin; endpoints
nodes <<'O'
controlplane|192.168.56.10|False|
O
rec "1 >&2" kubectl -n kube-flannel get daemonset kube-flannel-ds -o 'jsonpath={.spec.template.spec.containers[0].args}' <<<'Error from server (NotFound): namespaces "kube-flannel" not found'

state 03-flannel; nics; admin; endpoints; ds_ok
nodes <<'O'
controlplane|192.168.56.10|True|192.168.56.10
O

state 04-join-node01; nics; admin; ds_ok
nodes <<'O'
controlplane|192.168.56.10|True|192.168.56.10
node01|192.168.56.11|True|192.168.56.11
O

state 05-join-node02; nics; admin
nodes <<'O'
controlplane|192.168.56.10|True|192.168.56.10
node01|192.168.56.11|True|192.168.56.11
node02|192.168.56.12|True|192.168.56.12
O
rec 0 kubectl get pods -l app=web -o "jsonpath=$WEB" </dev/null

state 06-cross-node; nics; admin
rec 0 kubectl get pods -l app=web -o "jsonpath=$WEB" <<'O'
web-6d4cf56db6-7xk2p node01 10.244.1.2 Running
web-6d4cf56db6-q9m4z node02 10.244.2.2 Running
O
rec 0 curl -s -o /dev/null -w '%{http_code}' --max-time 5 http://10.244.1.2/ <<<'200'
rec 0 curl -s -o /dev/null -w '%{http_code}' --max-time 5 http://10.244.2.2/ <<<'200'
rec 0 kubectl get node node01 -o 'jsonpath={.spec.unschedulable}' </dev/null

state 07-drain; nics; admin
rec 0 kubectl get node node01 -o 'jsonpath={.spec.unschedulable}' <<<'true'
rec 0 kubectl get pods -l app=web -o "jsonpath=$WEB" <<'O'
web-6d4cf56db6-q9m4z node02 10.244.2.2 Running
web-6d4cf56db6-zr8tw node02 10.244.2.3 Running
O

state 08-uncordon; nics; admin
rec 0 kubectl get node node01 -o 'jsonpath={.spec.unschedulable}' </dev/null
cat >"$S/fs/root/after-uncordon.txt" <<'O'
NAME                   READY   STATUS    RESTARTS   AGE     IP           NODE     NOMINATED NODE   READINESS GATES
web-6d4cf56db6-q9m4z   1/1     Running   0          6m12s   10.244.2.2   node02   <none>           <none>
web-6d4cf56db6-zr8tw   1/1     Running   0          2m41s   10.244.2.3   node02   <none>           <none>
O
rec 0 kubectl get pods -l app=web -o "jsonpath=$WEB" <<'O'
web-6d4cf56db6-q9m4z node02 10.244.2.2 Running
web-6d4cf56db6-zr8tw node02 10.244.2.3 Running
O
# node02, not rebooted yet: kubelet was started by kubeadm join but never enabled.
rec 0 systemctl is-active kubelet <<<'active'
kubelet_unit
rec 0 kubectl --kubeconfig=/etc/kubernetes/kubelet.conf get node node02 -o 'jsonpath={.status.conditions[?(@.type=="Ready")].status}' <<<'True'

state 09-revive-node02; nics; admin; kubelet_unit; kubelet_enabled
rec 0 systemctl is-active kubelet <<<'active'
rec 0 kubectl --kubeconfig=/etc/kubernetes/kubelet.conf get node node02 -o 'jsonpath={.status.conditions[?(@.type=="Ready")].status}' <<<'True'

# Mistakes a learner makes, each for one step's check (its feedback must name the mistake).
state mistake-init-without-node-ip; nics; admin; default_kubelet ''''
nodes <<'O'
controlplane|10.0.2.15|False|
O
rec 0 kubectl get endpoints kubernetes -n default -o 'jsonpath={.subsets[0].addresses[0].ip}' <<<'10.0.2.15'

state mistake-flannel-without-iface; nics; admin
rec 0 kubectl -n kube-flannel get daemonset kube-flannel-ds -o 'jsonpath={.spec.template.spec.containers[0].args}' <<<'["--ip-masq","--kube-subnet-mgr"]'
nodes <<'O'
controlplane|192.168.56.10|True|10.0.2.15
O

state mistake-node02-rebooted-enabled-not-started; nics; admin; kubelet_unit
rec 3 systemctl is-active kubelet <<<'inactive'
rec "1 >&2" kubectl --kubeconfig=/etc/kubernetes/kubelet.conf get node node02 -o 'jsonpath={.status.conditions[?(@.type=="Ready")].status}' <<<'The connection to the server 192.168.56.10:6443 was refused - did you specify the right host or port?'

state mistake-node02-enabled-runtime; nics; admin; kubelet_unit; kubelet_enabled run
rec 0 systemctl is-active kubelet <<<'active'
rec 0 kubectl --kubeconfig=/etc/kubernetes/kubelet.conf get node node02 -o 'jsonpath={.status.conditions[?(@.type=="Ready")].status}' <<<'True'

# Other correct ways (the check must pass) and shortcuts (it must fail), per step.
init_now_ok() {
  nodes <<<"controlplane|${1:-192.168.56.10}|False|"
  endpoints
}
# init: --node-ip from kubeadm's nodeRegistration.kubeletExtraArgs (kubeadm-flags.env), /etc/default/kubelet as the package left it.
state alt-init-kubeadm-flags; nics; admin; default_kubelet ''; flags_env '--node-ip=192.168.56.10'; init_now_ok
# init: a drop-in of the admin's own that replaces ExecStart= (flag spelled "--node-ip IP").
state alt-init-dropin-execstart; nics; admin; default_kubelet ''
mkdir -p "$S/fs/etc/systemd/system/kubelet.service.d"
printf '[Service]\nExecStart=\nExecStart=/usr/bin/kubelet $KUBELET_KUBECONFIG_ARGS $KUBELET_CONFIG_ARGS $KUBELET_KUBEADM_ARGS $KUBELET_EXTRA_ARGS --node-ip 192.168.56.10\n' >"$S/fs/etc/systemd/system/kubelet.service.d/20-node-ip.conf"
init_now_ok
# init: a dual-stack node (two InternalIPs: fields must not shift), --node-ip with both families,
# and a warning kubectl prints on stderr beside the values (it must not mix into them).
state alt-init-dual-stack; nics; admin; default_kubelet ''; flags_env '--node-ip=192.168.56.10,fd00:56::10'
rec 0 kubectl get nodes -o "jsonpath=$NODES" <<O
$(printf '>&2 W1201 09:14:07.281733    4121 warnings.go:70] the in-tree cloud provider is deprecated (recorded text illustrative; the format is klog'"'"'s)\n')
$(printf 'controlplane\t192.168.56.10 fd00:56::10\tFalse\t')
O
endpoints
# init shortcut: a drop-in under /run (gone at boot) gives the running kubelet the address.
state shortcut-init-runtime-dropin; nics; admin; default_kubelet ''
mkdir -p "$S/fs/run/systemd/system/kubelet.service.d"
printf '[Service]\nExecStart=\nExecStart=/usr/bin/kubelet $KUBELET_KUBECONFIG_ARGS $KUBELET_CONFIG_ARGS $KUBELET_KUBEADM_ARGS --node-ip=192.168.56.10\n' >"$S/fs/run/systemd/system/kubelet.service.d/20-node-ip.conf"
init_now_ok
# init shortcut that only looks right: Environment=KUBELET_EXTRA_ARGS in a drop-in, but
# kubeadm's EnvironmentFile=/etc/default/kubelet (the package's empty KUBELET_EXTRA_ARGS=) overrides
# Environment= in systemd: the kubelet never gets the flag.
state shortcut-init-dropin-environment-overridden; nics; admin; default_kubelet ''
mkdir -p "$S/fs/etc/systemd/system/kubelet.service.d"
printf '[Service]\nEnvironment="KUBELET_EXTRA_ARGS=--node-ip=192.168.56.10"\n' >"$S/fs/etc/systemd/system/kubelet.service.d/20-node-ip.conf"
init_now_ok 10.0.2.15

# flannel: eth1 chosen with another spelling; the annotation shows the effect.
state alt-flannel-iface-split-args; nics; admin
rec 0 kubectl -n kube-flannel get daemonset kube-flannel-ds -o 'jsonpath={.spec.template.spec.containers[0].args}' <<<'["--ip-masq","--kube-subnet-mgr","--iface","eth1"]'
nodes <<<'controlplane|192.168.56.10|True|192.168.56.10'
state alt-flannel-iface-can-reach; nics; admin
rec 0 kubectl -n kube-flannel get daemonset kube-flannel-ds -o 'jsonpath={.spec.template.spec.containers[0].args}' <<<'["--ip-masq","--kube-subnet-mgr","--iface-can-reach=192.168.56.1"]'
nodes <<<'controlplane|192.168.56.10|True|192.168.56.10'
# flannel shortcut: the literal --iface=eth1 in the DaemonSet, but flanneld still runs on eth0's address.
state shortcut-flannel-args-only; nics; admin; ds_ok
nodes <<<'controlplane|192.168.56.10|True|10.0.2.15'

# join-node01: node01 dual-stack (two InternalIPs).
state alt-join-node01-dual-stack; nics; admin; ds_ok
nodes <<'O'
controlplane|192.168.56.10|True|192.168.56.10
node01|192.168.56.11 fd00:56::11|True|192.168.56.11
O

# uncordon shortcut: the listing typed by hand (plausible names, not the cluster's Pods).
state shortcut-uncordon-hand-typed-listing; nics; admin
rec 0 kubectl get node node01 -o 'jsonpath={.spec.unschedulable}' </dev/null
printf 'NAME      READY   STATUS    RESTARTS   AGE   IP           NODE\nweb-1     1/1     Running   0          1m    10.244.2.2   node02\nweb-2     1/1     Running   0          1m    10.244.2.3   node02\n' >"$S/fs/root/after-uncordon.txt"
rec 0 kubectl get pods -l app=web -o "jsonpath=$WEB" <<'O'
web-6d4cf56db6-q9m4z node02 10.244.2.2 Running
web-6d4cf56db6-zr8tw node02 10.244.2.3 Running
O
# uncordon: the listing saved with --no-headers; node01's flag set to false (kubectl patch) rather than removed.
state alt-uncordon-no-headers; nics; admin
rec 0 kubectl get node node01 -o 'jsonpath={.spec.unschedulable}' <<<'false'
printf 'web-6d4cf56db6-q9m4z   1/1   Running   0     6m12s   10.244.2.2   node02   <none>   <none>\nweb-6d4cf56db6-zr8tw   1/1   Running   0     2m41s   10.244.2.3   node02   <none>   <none>\n' >"$S/fs/root/after-uncordon.txt"
rec 0 kubectl get pods -l app=web -o "jsonpath=$WEB" <<'O'
web-6d4cf56db6-q9m4z node02 10.244.2.2 Running
web-6d4cf56db6-zr8tw node02 10.244.2.3 Running
O
