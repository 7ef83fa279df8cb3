#!/usr/bin/env bash
# Now: ip_forward is 1, read from /proc/sys (not `sysctl -n`). After a boot: systemd-sysctl sets
# it to 1 (checklib boot_sysctl: sysctl.d in name order, the last file wins, /run left out).
# Correct ways: a file read after zz-hardening.conf, or the zz- line commented out or edited, or
# the zz- file deleted; applied now by sysctl --system, sysctl -w or restarting systemd-sysctl.
# Refused: sysctl -w alone; a file under /run/sysctl.d; a k8s.conf that zz-hardening.conf overrides.
kernel_view_problems /proc/sys/net/ipv4/ip_forward /proc/uptime /proc/sys/kernel/random/boot_id
key=net.ipv4.ip_forward
now=$(sysctl_now "$key")
[ "$now" = 1 ] || now_problem "$key は ${now:-(なし)} です(1 にしてください)"
boot=$(boot_sysctl "$key")
if [ "$boot" != 1 ]; then
  src=$(boot_sysctl_source "$key")
  run=$(run_sysctl_files "$key" | paste -sd, -)
  if [ -n "$src" ]; then
    boot_problem "$key は起動時に ${boot} になります。最後にこの値を設定しているのは $src です"
  else
    boot_problem "$key を起動時に 1 にする設定ファイルがありません(/etc/sysctl.d/)"
  fi
  [ -z "$run" ] || problems+=("($run は /run にあるため、再起動で消えます)")
fi
finish "ip_forward は今も 1 で、次の起動でも 1 になります。"
