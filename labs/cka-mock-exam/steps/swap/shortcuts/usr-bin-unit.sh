#!/usr/bin/env bash
# Off now and the fstab line commented out, but an enabled unit runs a script in /usr/bin that runs
# another that turns the swap file on at boot; a stand-in `swapon` early on PATH reports no swap.
# The boot scan follows the unit's ExecStart into both scripts; after a real reboot the kernel's
# /proc/swaps says the swap is on.
# reboot: yes
# expect-output: 再起動後: swapon が有効に戻ります
# expect-output: /usr/lib/swap-keeper/start
# expect-after-reboot: 今: スワップが有効です: /swapfile
swapoff -a
sed -i '/^[^#].*\sswap\s/ s/^/# /' /etc/fstab
mkdir -p /usr/lib/swap-keeper
printf '#!/bin/sh\n/sbin/swapon -p 7 /swapfile\n' >/usr/lib/swap-keeper/start
printf '#!/bin/sh\n# keeps the machine responsive\nexec /usr/lib/swap-keeper/start\n' >/usr/bin/swap-keeper
chmod 755 /usr/lib/swap-keeper/start /usr/bin/swap-keeper
cat >/etc/systemd/system/swap-keeper.service <<'UNIT'
[Unit]
Description=Keeps memory pressure low
[Service]
Type=oneshot
ExecStart=/usr/bin/swap-keeper
[Install]
WantedBy=multi-user.target
UNIT
systemctl daemon-reload
systemctl enable swap-keeper.service >/dev/null 2>&1
printf '#!/bin/sh\nexit 0\n' >/usr/local/sbin/swapon
chmod 755 /usr/local/sbin/swapon
sync
