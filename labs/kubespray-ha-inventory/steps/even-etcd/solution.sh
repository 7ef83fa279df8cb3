#!/usr/bin/env bash
export PATH=/opt/kubespray-venv/bin:$PATH
src=/root/ha even=/root/ha-even
rm -rf "$even" && cp -r "$src" "$even"
python3 - "$even/inventory.ini" <<'PY'
import sys
path = sys.argv[1]
text = open(path).read().replace("[etcd:children]\nkube_control_plane\n", "[etcd]\ncp1\ncp2\n")
open(path, "w").write(text)
PY
cd "/opt/kubespray"
# The check is expected to stop this run: its exit status is not the step's.
ansible-playbook -i "$even/inventory.ini" playbooks/boilerplate.yml -e ansible_connection=local >"$even/validate.log" 2>&1 || true
