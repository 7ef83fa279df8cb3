# Helpers every check of this lab shares (lab.yaml `checkLib`): the grader puts this file after
# the platform's checklib.sh (which has `problems` and `finish`) and before each check.
# kubespray's Ansible (the image's venv) first; an inventory Ansible cannot parse is an error, not an empty list.
export PATH=/opt/kubespray-venv/bin:$PATH ANSIBLE_INVENTORY_UNPARSED_FAILED=true ANSIBLE_LOCALHOST_WARNING=false ANSIBLE_NOCOLOR=true
HA=/root/ha
# ansible-inventory --list of each inventory file, read once per check (Ansible starts slowly).
declare -A INVENTORY=()
inv_load() { INVENTORY[$1]=$(ansible-inventory -i "$1" --list 2>/dev/null); [ -n "${INVENTORY[$1]}" ]; }
# "group host" for every host of every group, child groups resolved. Usage: inv_load FILE; inv_members FILE
inv_members() {
  printf '%s' "${INVENTORY[$1]:-}" | python3 -c '
import json, sys
d = json.load(sys.stdin)
def members(g, seen):
    if g in seen: return set()
    seen.add(g)
    e = d.get(g, {})
    hs = set(e.get("hosts", []))
    for c in e.get("children", []): hs |= members(c, seen)
    return hs
for g in d:
    if g != "_meta":
        for h in sorted(members(g, set())): print(g, h)
' 2>/dev/null
}
# Hosts of GROUP in the output of inv_members (stdin), space-separated and sorted.
hosts_of() { awk -v g="$1" '$1 == g { print $2 }' | sort | paste -sd" " -; }
# "host value" for every host, VAR from host_vars and group_vars merged ("-" when unset). Usage: host_vars_of FILE VAR
host_vars_of() {
  printf '%s' "${INVENTORY[$1]:-}" | python3 -c '
import json, sys
for host, v in sorted(json.load(sys.stdin).get("_meta", {}).get("hostvars", {}).items()):
    print(host, v.get(sys.argv[1], "-") or "-")
' "$2" 2>/dev/null
}
# The check's own evidence: kubespray's ansible-playbook run in /opt/kubespray by the check itself
# (stdout only: warnings on stderr never mix in), cut at RUN_SECONDS: below the timeout of the
# steps that run it (validate, even-etcd: 120 s, one run; list-hosts: 200 s, two runs), with room
# for Ansible's slow start on a TCG VM. The stand-in's runs take 1.2-1.4 s here (measured beside
# a CI run); kubespray's own boilerplate.yml on the image is not measured yet.
RUN_SECONDS=90
kubespray_run() { (cd /opt/kubespray && timeout "$RUN_SECONDS" ansible-playbook "$@" 2>/dev/null); }
# The lines of ansible-playbook output (FILE..., or stdin) that depend only on the inventory and
# the playbook: TASK headers, fatal: hosts, RECAP rows. Colours, CR, the *** rulers and column
# padding dropped; -v output, `2>&1` warnings and `tee`/`>` make no difference. A saved log is
# accepted when these lines equal the check's own run: a hand-typed RECAP does not have them.
run_facts() {
  sed 's/\x1b\[[0-9;]*m//g; s/\r$//' "$@" | awk '
    /^TASK \[/ { sub(/ \*+$/, ""); print; next }
    /^PLAY RECAP/ { r = 1; print "PLAY RECAP"; next }
    r && NF >= 2 && $2 == ":" { $1 = $1; print; next }
    /^fatal: \[/ { print $1, $2 }'
}
# Hosts with failed= or unreachable= above 0 in run_facts output (stdin), comma-separated.
failed_hosts() { awk '$2 == ":" { for (i = 3; i <= NF; i++) if ($i ~ /^(failed|unreachable)=[1-9]/) { print $1; next } }' | paste -sd, -; }
