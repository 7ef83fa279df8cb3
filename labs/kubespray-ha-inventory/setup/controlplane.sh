#!/usr/bin/env bash
# Prepares the kubespray inventory lab: the kubespray image carries /opt/kubespray and its Ansible
# in /opt/kubespray-venv; the learner's work goes to /root/ha (and /root/ha-even), cleared here.
set -euo pipefail
if [ ! -f /opt/kubespray/cluster.yml ] || [ ! -x /opt/kubespray-venv/bin/ansible-playbook ]; then
  echo "このマシンには kubespray がありません。このラボは kubespray-v2.26.0 イメージで動きます(npm run labdeck -- image build --variant kubespray-v2.26.0)。" >&2
  exit 1
fi
rm -rf /root/ha /root/ha-even
# Login shells find kubespray's Ansible first (the image's /etc/profile.d/kubespray.sh); say so in root's shell too.
grep -q kubespray-venv /root/.bashrc 2>/dev/null || echo 'PATH=/opt/kubespray-venv/bin:$PATH' >>/root/.bashrc
