#!/usr/bin/env bash
# Writes test/recorded/*: the states of this lab a learner passes through, as the outputs the
# commands its checks call would print (kubectl formats) and the files they read (kubeadm's
# static Pod manifests, trimmed). Written by hand from those formats, not captured: this
# workplace cannot run Kubernetes (see README.md).
set -euo pipefail
D=$(cd "$(dirname "$0")" && pwd)/recorded
rm -rf "$D"; mkdir -p "$D"
LABELS='jsonpath={.metadata.labels.team}|{.metadata.labels.env}|{.metadata.annotations.contact}'
MINIFY='jsonpath={.contexts[0].name}|{.contexts[0].context.namespace}|{.clusters[0].cluster.server}'
FILEJP='jsonpath={.kind}/{.metadata.name}/{.metadata.namespace}/{.spec.strategy.rollingUpdate.maxUnavailable}'
LIVEJP='jsonpath={.spec.replicas}/{.spec.strategy.rollingUpdate.maxUnavailable}/{.spec.template.spec.containers[0].image}'
CRDHEAD='jsonpath={.status.conditions[?(@.type=="Established")].status}|{.spec.scope}|{.spec.names.kind}'
CRDSCHEMA='jsonpath={.spec.versions[0].schema.openAPIV3Schema.properties.spec.required}|{.spec.versions[0].schema.openAPIV3Schema.properties.spec.properties.schedule.type}|{.spec.versions[0].schema.openAPIV3Schema.properties.spec.properties.retentionDays.type}|{.spec.versions[0].schema.openAPIV3Schema.properties.spec.properties.retentionDays.minimum}|{.spec.versions[0].schema.openAPIV3Schema.properties.spec.properties.retentionDays.maximum}'
NIGHTLY='jsonpath={.spec.schedule}|{.spec.retentionDays}'
rec() { local rc=$1; shift; if [ "$rc" = 0 ]; then echo "### $*"; else echo "### rc=$rc $*"; fi >>"$S/commands.txt"; cat >>"$S/commands.txt"; }
state() {
  S=$D/$1; mkdir -p "$S/fs/etc/kubernetes/manifests" "$S/fs/root"; : >"$S/commands.txt"
  local m=$S/fs/etc/kubernetes/manifests
  cat >"$S/fs/etc/kubernetes/admin.conf" <<'K'
# Recorded /etc/kubernetes/admin.conf with its certificate and key data removed.
apiVersion: v1
kind: Config
clusters:
- cluster:
    certificate-authority-data: REMOVED
    server: https://192.168.56.10:6443
  name: kubernetes
current-context: kubernetes-admin@kubernetes
K
  printf '%s\n' "# kubeadm's static Pod manifest, trimmed to its command (recorded)" "apiVersion: v1" "kind: Pod" "metadata:" "  name: etcd" "  namespace: kube-system" "spec:" "  containers:" "  - command:" "    - etcd" "    - --advertise-client-urls=https://192.168.56.10:2379" "    - --data-dir=/var/lib/etcd" "    - --listen-client-urls=https://127.0.0.1:2379,https://192.168.56.10:2379" "    - --listen-peer-urls=https://192.168.56.10:2380" "    - --name=controlplane" "    image: registry.k8s.io/etcd:3.5.15-0" >"$m/etcd.yaml"
  printf '%s\n' "# kubeadm's static Pod manifest, trimmed to its command (recorded)" "apiVersion: v1" "kind: Pod" "metadata:" "  name: kube-apiserver" "  namespace: kube-system" "spec:" "  containers:" "  - command:" "    - kube-apiserver" "    - --advertise-address=192.168.56.10" "    - --authorization-mode=Node,RBAC" "    - --etcd-cafile=/etc/kubernetes/pki/etcd/ca.crt" "    - --etcd-servers=https://127.0.0.1:2379" "    - --secure-port=6443" "    - --service-cluster-ip-range=10.96.0.0/12" "    image: registry.k8s.io/kube-apiserver:v1.31.4" >"$m/kube-apiserver.yaml"
  printf '%s\n' "# kubeadm's static Pod manifest, trimmed to its command (recorded)" "apiVersion: v1" "kind: Pod" "metadata:" "  name: kube-controller-manager" "  namespace: kube-system" "spec:" "  containers:" "  - command:" "    - kube-controller-manager" "    - --bind-address=127.0.0.1" "    - --cluster-cidr=10.244.0.0/16" "    - --kubeconfig=/etc/kubernetes/controller-manager.conf" "    - --leader-elect=true" "    image: registry.k8s.io/kube-controller-manager:v1.31.4" >"$m/kube-controller-manager.yaml"
  printf '%s\n' "# kubeadm's static Pod manifest, trimmed to its command (recorded)" "apiVersion: v1" "kind: Pod" "metadata:" "  name: kube-scheduler" "  namespace: kube-system" "spec:" "  containers:" "  - command:" "    - kube-scheduler" "    - --authentication-kubeconfig=/etc/kubernetes/scheduler.conf" "    - --bind-address=127.0.0.1" "    - --kubeconfig=/etc/kubernetes/scheduler.conf" "    - --leader-elect=true" "    image: registry.k8s.io/kube-scheduler:v1.31.4" >"$m/kube-scheduler.yaml"
}
explore() { printf 'apiserver-port=6443\netcd-client=kube-apiserver\nscheduler-bind=127.0.0.1\n' >"$S/fs/root/explore.txt"; }
shopns() { rec 0 kubectl get namespace shop -o "$LABELS" <<<'payments|staging|payments-oncall@example.com'; }
kubeconfig() { printf '# Recorded /root/shop.kubeconfig with its certificate and key data removed.\napiVersion: v1\nkind: Config\ncurrent-context: shop\n' >"$S/fs/root/shop.kubeconfig"; }
context_ok() {
  kubeconfig
  rec 0 kubectl --kubeconfig=/root/shop.kubeconfig config view --minify -o "$MINIFY" <<<'shop|shop|https://192.168.56.10:6443'
  rec 0 kubectl --kubeconfig=/root/shop.kubeconfig auth can-i list pods <<<'yes'
}
webyaml() { printf '# recorded: kubectl create deployment web ... --dry-run=client -o yaml, edited\napiVersion: apps/v1\nkind: Deployment\n' >"$S/fs/root/web.yaml"; }
dryrun_ok() {
  webyaml
  rec 0 kubectl create --dry-run=client -f /root/web.yaml -o "$FILEJP" <<<'Deployment/web/shop/0'
  rec 0 kubectl -n shop get deployment web -o "$LIVEJP" <<<'2/0/nginx:1.27'
}
crd_ok() {
  rec 0 kubectl get crd backups.labdeck.example -o "$CRDHEAD" <<<'True|Namespaced|Backup'
  rec 0 kubectl get crd backups.labdeck.example -o "$CRDSCHEMA" <<<'["schedule","retentionDays"]|string|integer|1|30'
}
badyaml() { printf 'apiVersion: labdeck.example/v1\nkind: Backup\nmetadata:\n  name: weekly\n  namespace: shop\nspec:\n  schedule: "0 3 * * 0"\n  retentionDays: 90\n' >"$S/fs/root/bad-backup.yaml"; }
INVALID='The Backup "weekly" is invalid: spec.retentionDays: Invalid value: 90: spec.retentionDays in body should be less than or equal to 30'

state 00-setup

state 01-explore; explore
rec "1 >&2" kubectl get namespace shop -o "$LABELS" <<<'Error from server (NotFound): namespaces "shop" not found'

state 02-labels; explore; shopns

state 03-context; shopns; context_ok

state 04-dry-run; context_ok; dryrun_ok
rec "1 >&2" kubectl get crd backups.labdeck.example -o "$CRDHEAD" <<<'Error from server (NotFound): customresourcedefinitions.apiextensions.k8s.io "backups.labdeck.example" not found'

state 05-crd; dryrun_ok; crd_ok
rec "1 >&2" kubectl -n shop get backup nightly -o "$NIGHTLY" <<<'Error from server (NotFound): backups.labdeck.example "nightly" not found'

state 06-reject; crd_ok; badyaml
rec 0 kubectl -n shop get backup nightly -o "$NIGHTLY" <<<'0 2 * * *|7'
rec "1 >&2" kubectl create --dry-run=server -f /root/bad-backup.yaml <<<"$INVALID"
echo "$INVALID" >"$S/fs/root/reject.txt"

# Mistakes a learner makes, each for one step's check (its feedback must name the mistake).
state mistake-context-not-selected
printf '# Recorded /root/shop.kubeconfig (no current-context), data removed.\napiVersion: v1\nkind: Config\ncurrent-context: ""\n' >"$S/fs/root/shop.kubeconfig"
rec "1 >&2" kubectl --kubeconfig=/root/shop.kubeconfig config view --minify -o "$MINIFY" <<<'error: current-context must exist in order to minify'
rec "1 >&2" kubectl --kubeconfig=/root/shop.kubeconfig auth can-i list pods <<<'The connection to the server localhost:8080 was refused - did you specify the right host or port?'

state mistake-dry-run-strategy-not-set; webyaml
rec 0 kubectl create --dry-run=client -f /root/web.yaml -o "$FILEJP" <<<'Deployment/web/shop/'
rec 0 kubectl -n shop get deployment web -o "$LIVEJP" <<<'2/25%/nginx:1.27'

state mistake-crd-without-bounds
rec 0 kubectl get crd backups.labdeck.example -o "$CRDHEAD" <<<'True|Namespaced|Backup'
rec 0 kubectl get crd backups.labdeck.example -o "$CRDSCHEMA" <<<'["schedule"]|string|integer||'

state mistake-reject-good-object; badyaml; sed -i 's/retentionDays: 90/retentionDays: 14/' "$S/fs/root/bad-backup.yaml"
rec 0 kubectl -n shop get backup nightly -o "$NIGHTLY" <<<'0 2 * * *|7'
rec 0 kubectl create --dry-run=server -f /root/bad-backup.yaml <<<'backup.labdeck.example/weekly created (server dry run)'

# Other correct ways (each check must pass there).
# explore: the answer file written as a person might: CRLF, capitalised keys, spaces, a comment.
state alt-explore-lenient-answers
printf '# what I found\r\nAPIServer-Port = 6443\r\nEtcd-Client = kube-apiserver   # only the API server\r\nscheduler-bind=127.0.0.1\r\n' >"$S/fs/root/explore.txt"
# context and dry-run: kubectl prints a warning on stderr beside the values (kubectl prints the
# API server's warnings as "Warning: ..." lines on stderr; the text here is illustrative).
state alt-context-warning-on-stderr; kubeconfig
rec 0 kubectl --kubeconfig=/root/shop.kubeconfig config view --minify -o "$MINIFY" <<'O'
>&2 Warning: recorded stderr line beside the values (kubectl prints warnings this way)
shop|shop|https://192.168.56.10:6443
O
rec 0 kubectl --kubeconfig=/root/shop.kubeconfig auth can-i list pods <<'O'
>&2 Warning: recorded stderr line beside the answer (kubectl prints warnings this way)
yes
O
state alt-dry-run-warning-on-stderr; context_ok; webyaml
rec 0 kubectl create --dry-run=client -f /root/web.yaml -o "$FILEJP" <<'O'
>&2 Warning: spec.template.spec.containers[0].resources: recorded stderr line beside the values
Deployment/web/shop/0
O
rec 0 kubectl -n shop get deployment web -o "$LIVEJP" <<<'2/0/nginx:1.27'
# reject: the refusal saved from kubectl apply, whose message has another prefix than create's.
state alt-reject-saved-from-apply; crd_ok; badyaml
rec 0 kubectl -n shop get backup nightly -o "$NIGHTLY" <<<'0 2 * * *|7'
rec "1 >&2" kubectl create --dry-run=server -f /root/bad-backup.yaml <<<"$INVALID"
echo "Error from server (Invalid): error when creating \"/root/bad-backup.yaml\": ${INVALID#The }" >"$S/fs/root/reject.txt"

# Shortcuts (each check must refuse them).
# reject: the message typed by hand, without the server's reasons.
state shortcut-reject-hand-typed; crd_ok; badyaml
rec 0 kubectl -n shop get backup nightly -o "$NIGHTLY" <<<'0 2 * * *|7'
rec "1 >&2" kubectl create --dry-run=server -f /root/bad-backup.yaml <<<"$INVALID"
echo 'The Backup "weekly" is invalid: retentionDays is too big' >"$S/fs/root/reject.txt"
