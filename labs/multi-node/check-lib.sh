# Helpers every check of this lab shares (lab.yaml `checkLib`): the grader puts this file after
# the platform's checklib.sh (which has `problems` and `finish`) and before each check.
# Checks read the cluster as its admin; the learner's own ~/.kube/config does not matter.
export KUBECONFIG=/etc/kubernetes/admin.conf
# One line per node, TAB-separated: "name<TAB>InternalIPs<TAB>Ready-status<TAB>flannel-public-ip".
# A dual-stack node has two InternalIP addresses (jsonpath joins them with a space): fields are
# split on TABs only, so the second address never shifts Ready into the address's place. Read it
# with node_field. stderr (warnings) never mixes into the values.
NODES_JSONPATH='{range .items[*]}{.metadata.name}{"\t"}{.status.addresses[?(@.type=="InternalIP")].address}{"\t"}{.status.conditions[?(@.type=="Ready")].status}{"\t"}{.metadata.annotations.flannel\.alpha\.coreos\.com/public-ip}{"\n"}{end}'
nodes_table() { kubectl get nodes -o "jsonpath=$NODES_JSONPATH" 2>/dev/null; }
# Field N (2 InternalIPs, 3 Ready, 4 flannel public-ip) of NODE in nodes_table (stdin).
node_field() { awk -F'\t' -v n="$1" -v f="$2" '$1 == n { print $f; exit }'; }
# True when ADDRESS is one of the space-separated LIST (a dual-stack node's InternalIPs).
has_address() { [[ " $1 " == *" $2 "* ]]; }

# The kubelet's command line at the next start, one argument a line, as systemd builds it from
# what survives a reboot (checklib boot_unit_setting: the unit file and its persistent drop-ins,
# /run left out): the last ExecStart=, its $VAR / ${VAR} taken from Environment= and then
# EnvironmentFile= (which wins, as in systemd; a leading "-" marks an optional file). So every
# place kubeadm's unit reads counts: /etc/default/kubelet (KUBELET_EXTRA_ARGS),
# /var/lib/kubelet/kubeadm-flags.env (KUBELET_KUBEADM_ARGS, written from kubeadm's
# nodeRegistration.kubeletExtraArgs), a drop-in's Environment= or its own ExecStart=.
kubelet_boot_args() {
  {
    boot_unit_setting kubelet Environment | sed 's/^/E /'
    boot_unit_setting kubelet EnvironmentFile | sed 's/^/F /'
    boot_unit_setting kubelet ExecStart | tail -1 | sed 's/^/X /'
  } | python3 -c '
import re, shlex, sys
env, files, execs = {}, [], ""
for line in sys.stdin.read().splitlines():
    kind, _, value = line.partition(" ")
    if kind == "E":
        for word in shlex.split(value):
            k, eq, v = word.partition("=")
            if eq: env[k] = v
    elif kind == "F":
        files.append(value.lstrip("-"))
    else:
        execs = value
for f in files:
    try: text = open(f).read()
    except OSError: continue
    for raw in text.splitlines():
        raw = raw.strip()
        if not raw or raw[0] in "#;": continue
        k, eq, v = raw.partition("=")
        if not eq: continue
        try: words = shlex.split(v)
        except ValueError: continue
        env[k.strip()] = " ".join(words)
execs = execs.lstrip("-@:+!")
try: words = shlex.split(execs)
except ValueError: words = []
for w in words[1:]:
    m = re.fullmatch(r"\$([A-Za-z_][A-Za-z0-9_]*)", w)
    if m:
        for part in env.get(m.group(1), "").split(): print(part)
        continue
    print(re.sub(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}", lambda m: env.get(m.group(1), ""), w))
' 2>/dev/null
}
# The --node-ip the kubelet gets at its next start (comma-separated for dual-stack), empty: none.
kubelet_boot_node_ip() {
  kubelet_boot_args | awk '/^--node-ip=/ { v = substr($0, 11) } p { v = $0; p = 0 } /^--node-ip$/ { p = 1 } END { print v }'
}
# One line per Pod of the web Deployment: "name node podIP phase".
WEB_JSONPATH='{range .items[*]}{.metadata.name} {.spec.nodeName} {.status.podIP} {.status.phase}{"\n"}{end}'
web_pods() { kubectl get pods -l app=web -o "jsonpath=$WEB_JSONPATH" 2>/dev/null; }
# eth1 address of a lab machine: the platform writes every machine's eth1 address into /etc/hosts.
eth1_of() { awk -v n="$1" '!/^#/ && $2 == n { print $1; exit }' "/etc/hosts"; }
