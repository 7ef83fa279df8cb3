#!/usr/bin/env bash
set -e
export PATH=/opt/kubespray-venv/bin:$PATH
ha=/root/ha
python3 - "$ha/inventory.ini" <<'PY'
import sys
path = sys.argv[1]
text = open(path).read()
if "\nwk3\n" not in text:
    text = text.replace("[kube_node]\nwk1\nwk2\n", "[kube_node]\nwk1\nwk2\nwk3\n")
open(path, "w").write(text)
PY
printf 'ansible_host: 10.20.0.23\nip: 10.20.0.23\n' >"$ha/host_vars/wk3.yml"
cd "/opt/kubespray"
ansible-playbook -i "$ha/inventory.ini" scale.yml --limit wk3 --list-hosts >"$ha/scale-hosts.txt"
ansible-playbook -i "$ha/inventory.ini" remove-node.yml -e node=wk3 --list-hosts >"$ha/remove-hosts.txt"
