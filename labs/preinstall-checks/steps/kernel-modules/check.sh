#!/usr/bin/env bash
# Now: overlay and br_netfilter loaded (/sys/module). After a boot: systemd-modules-load loads
# them (checklib boot_module: /etc/modules-load.d, /usr/lib/modules-load.d, Debian's /etc/modules).
# Correct ways, each accepted:
#  - a modules-load.d file of any name (k8s.conf, containerd.conf, kubespray's
#    kubespray-br_netfilter.conf), one module a line, then modprobe (the lesson's way);
#  - the modules in /etc/modules (Debian's classic file), then modprobe;
#  - the file first, then `systemctl restart systemd-modules-load` instead of modprobe.
# Refused: modprobe alone; a file under /run/modules-load.d (tmpfs: gone at boot); a line with an
# inline comment ("overlay # ...": systemd-modules-load takes the whole line as the module name).
kernel_view_problems /sys/module
require_modules overlay br_netfilter
finish "overlay と br_netfilter は読み込まれていて、次の起動でも読み込まれます。"
