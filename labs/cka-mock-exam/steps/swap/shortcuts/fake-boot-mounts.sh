#!/usr/bin/env bash
# The lesson's fix, then a "reboot" made of two bind mounts: a new boot id and a short uptime. The
# reboot proof takes no boot facts from covered files, and the check names them.
# expect-output: /proc/sys/kernel/random/boot_id はカーネルの内容ではありません
# expect-output: /proc/uptime はカーネルの内容ではありません
swapoff -a
sed -i '/^[^#].*\sswap\s/ s/^/# /' /etc/fstab
systemctl daemon-reload
cat /proc/sys/kernel/random/uuid >/root/.boot_id
echo '3.50 1.00' >/root/.uptime
mount --bind /root/.boot_id /proc/sys/kernel/random/boot_id
mount --bind /root/.uptime /proc/uptime
