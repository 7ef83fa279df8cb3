#!/usr/bin/env bash
# Now: both keys are 1, read from /proc/sys (not `sysctl -n`, which a stand-in could answer for). After a boot: systemd-sysctl sets them to 1 (checklib
# boot_sysctl: sysctl.d in name order, the last file wins, /run left out); the bridge key exists
# only when br_netfilter is loaded at boot, and is 1 then unless a file says otherwise (the
# kernel's default).
# Correct ways, each accepted:
#  - /etc/sysctl.d/k8s.conf, and the zz- line commented out (the lesson's way), or the zz- file
#    deleted or edited to 1;
#  - a file read after zz-hardening.conf (e.g. /etc/sysctl.d/zzz-kubernetes.conf);
#  - the values in /etc/sysctl.conf (read as 99-sysctl.conf), with the zz- line dealt with;
#  - applied now by sysctl --system, sysctl -w, or systemctl restart systemd-sysctl.
# Refused: sysctl -w alone; a file under /run/sysctl.d (gone at boot); /etc/sysctl.conf while the
# zz- file still wins at boot; k8s.conf alone (zz- puts ip_forward back to 0 even now).
# The boot files too: the reboot proof reads them, and takes no new boot from covered ones.
kernel_view_problems /proc/sys/net/ipv4/ip_forward /proc/sys/net/bridge/bridge-nf-call-iptables /proc/uptime /proc/sys/kernel/random/boot_id
for key in net.ipv4.ip_forward net.bridge.bridge-nf-call-iptables; do
  now=$(sysctl_now "$key")
  if [ -z "$now" ]; then
    now_problem "$key が見つかりません(br_netfilter は読み込まれていますか?)"
  elif [ "$now" != 1 ]; then
    now_problem "$key は $now です(1 にしてください)"
  fi
  boot=$(boot_sysctl "$key")
  case $key in
    net.bridge.*)
      if ! boot_module br_netfilter; then
        boot_problem "br_netfilter が起動時に読み込まれないため、$key がありません(前のステップ)"
        continue
      fi
      boot=${boot:-1} ;;
  esac
  [ "$boot" = 1 ] && continue
  src=$(boot_sysctl_source "$key")
  run=$(run_sysctl_files "$key" | paste -sd, -)
  if [ -n "$src" ]; then
    boot_problem "$key は ${boot} になります。最後にこの値を設定しているのは $src です"
  else
    boot_problem "$key を起動時に 1 にする設定ファイルがありません(/etc/sysctl.d/)"
  fi
  [ -z "$run" ] || problems+=("($run は /run にあるため、再起動で消えます)")
done
finish "ip_forward と bridge-nf-call-iptables は今も 1 で、次の起動でも 1 になります。"
