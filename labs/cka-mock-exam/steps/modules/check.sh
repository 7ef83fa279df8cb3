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
for m in overlay br_netfilter; do
  module_loaded "$m" || now_problem "$m が読み込まれていません(modprobe $m)"
  if ! boot_module "$m"; then
    run=$(run_module_files "$m" | paste -sd, -)
    bad=$(boot_module_bad_lines | grep -F -- "$m" | head -1)
    if [ -n "$run" ]; then
      boot_problem "$m は読み込まれません。$run は /run(tmpfs)にあり、再起動で消えます(/etc/modules-load.d/ に置きます)"
    elif [ -n "$bad" ]; then
      boot_problem "$m は読み込まれません。$bad: 行の途中のコメントは書けません(1 行にモジュール名だけ)"
    else
      boot_problem "$m は読み込まれません(/etc/modules-load.d/*.conf に 1 行 1 モジュールで書きます)"
    fi
  fi
done
finish "overlay と br_netfilter は読み込まれていて、次の起動でも読み込まれます。"
