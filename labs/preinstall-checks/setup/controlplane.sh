#!/usr/bin/env bash
# Plants the three leftovers the lesson describes, as they are found in real life.
set -euo pipefail

# 1. A swap file someone made when memory was short, registered in fstab with a priority and
#    active now. The priority is this session's own random number: the record-before step's check
#    finds it in what the learner saved, a fact only this machine gives (not a line from the
#    lesson). It is kept nowhere else: the check reads it back from /proc/swaps or fstab.
#    Written with dd (not fallocate/truncate): swapon refuses files with holes.
if [ ! -f /swapfile ]; then
  dd if=/dev/zero of=/swapfile bs=1M count=128 status=none
  chmod 600 /swapfile
  mkswap /swapfile >/dev/null
fi
pri=$((100 + RANDOM % 900))
rm -rf /var/lib/preinstall-checks # an older setup kept the priority here
sed -i '/^\/swapfile[[:space:]]/d' /etc/fstab
echo "/swapfile none swap sw,pri=$pri 0 0" >>/etc/fstab
swapoff /swapfile 2>/dev/null || true
swapon -p "$pri" /swapfile

# 2. An old monitoring agent serving HTTP on 10250 (kubelet's port), restarted by systemd.
mkdir -p /opt/legacy-agent
echo 'legacy metrics agent v0.9' >/opt/legacy-agent/index.html
cat >/etc/systemd/system/legacy-metrics-agent.service <<'EOF'
[Unit]
Description=Legacy metrics agent (HTTP on :10250)
After=network.target

[Service]
ExecStart=/usr/bin/python3 -m http.server 10250 --directory /opt/legacy-agent
Restart=always
RestartSec=2

[Install]
WantedBy=multi-user.target
EOF
systemctl daemon-reload
systemctl enable --now legacy-metrics-agent.service >/dev/null 2>&1

# 3. A hardening file that turns routing off, named zz- so it is read after everything else.
cat >/etc/sysctl.d/zz-hardening.conf <<'EOF'
# セキュリティ点検 (2023-04): ルーティングを禁止する
net.ipv4.ip_forward = 0
EOF
sysctl -q -w net.ipv4.ip_forward=0

# A clean slate for what the learner adds.
rm -f /etc/modules-load.d/k8s.conf /etc/sysctl.d/k8s.conf /root/before.txt /root/memtotal_mb.txt /root/memory-verdict.txt /root/who-fixes.txt

# The agent is a listener before the learner arrives (python starts slowly under emulation).
for _ in $(seq 1 60); do
  ss -ltn 'sport = :10250' | grep -q 10250 && break
  sleep 0.5
done
ss -ltn 'sport = :10250' | grep -q 10250 || { echo "setup: legacy-metrics-agent is not listening on 10250" >&2; exit 1; }
# Everything planted is on disk before anyone pulls the plug.
sync
