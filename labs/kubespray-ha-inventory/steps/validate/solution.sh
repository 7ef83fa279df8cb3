#!/usr/bin/env bash
set -o pipefail
export PATH=/opt/kubespray-venv/bin:$PATH
cd "$LABDECK_ROOT/opt/kubespray"
ansible-playbook -i "$LABDECK_ROOT/root/ha/inventory.ini" playbooks/boilerplate.yml -e ansible_connection=local | tee "$LABDECK_ROOT/root/ha/validate.log" >/dev/null
