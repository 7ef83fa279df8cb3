#!/usr/bin/env bash
set -o pipefail
export PATH=/opt/kubespray-venv/bin:$PATH
cd "/opt/kubespray"
ansible-playbook -i "/root/ha/inventory.ini" playbooks/boilerplate.yml -e ansible_connection=local | tee "/root/ha/validate.log" >/dev/null
