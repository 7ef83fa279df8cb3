# Helpers every check of this lab shares (lab.yaml `checkLib`): the grader puts this file after
# the platform's checklib.sh (which has `problems` and `finish`) and before each check.
# Checks read the cluster as its admin; the learner's own ~/.kube/config does not matter.
export KUBECONFIG=/etc/kubernetes/admin.conf
MANIFESTS=/etc/kubernetes/manifests
# The value of KEY in a key=value answer file (last one wins), empty when missing.
answer() { sed -n "s/^[[:space:]]*$2[[:space:]]*=[[:space:]]*\([^[:space:]#]*\).*/\1/p" "$1" 2>/dev/null | tail -1; }
