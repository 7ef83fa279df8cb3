# Helpers every check of this lab shares (lab.yaml `checkLib`): the grader puts this file after
# the platform's checklib.sh (which has `problems` and `finish`) and before each check.
# Checks read the cluster as its admin; the learner's own ~/.kube/config does not matter.
export KUBECONFIG=/etc/kubernetes/admin.conf
MANIFESTS=/etc/kubernetes/manifests
# The value of KEY in a key=value answer file (last one wins), empty when missing. Read through
# checklib's answer_lines: CRLF, a BOM, full-width characters, # comments, spacing and case do
# not matter (KEY in lower case).
answer() { answer_lines "$1" | sed -n "s/^$2 \{0,1\}= \{0,1\}\([^ ]*\).*/\1/p" | tail -1; }
# Runs a command: its stdout in OUT, the first 300 bytes of its stderr in ERR, its exit status
# returned. Values compared for equality come from OUT only, so a warning kubectl prints on
# stderr (Warning: ..., klog W lines) never mixes into them; ERR is only quoted in feedback.
split_run() {
  local e rc
  e=$(mktemp)
  OUT=$("$@" 2>"$e") && rc=0 || rc=$?
  ERR=$(head -c 300 "$e"); rm -f "$e"
  return "$rc"
}
