#!/usr/bin/env bash
# Now: nothing listens on 10250 (/proc/net/tcp and tcp6, not `ss`), and the unit that did is not running (or waiting to restart)
# with 10250 in its command. After a boot: that unit is not started (checklib boot_unit_state:
# /etc and vendor unit directories, /run left out), or its ExecStart at boot no longer uses 10250.
# Correct ways, each accepted:
#  - systemctl disable --now (the lesson's way), or stop and disable as two commands;
#  - the unit file removed and the unit stopped (its wants link left dangling starts nothing);
#  - the agent moved to another port by a drop-in in /etc/systemd/system/<unit>.d/, restarted.
# Refused: kill (Restart=always brings it back); stop alone, or stop with mask --runtime (the
# /etc wants link starts it at boot); disable alone (it still runs now).
# (`systemctl mask` is no way here: the unit's own file is in /etc/systemd/system.)
unit=legacy-metrics-agent.service
kernel_view_problems /proc/net/tcp /proc/net/tcp6
if [ -n "$(tcp_listening 10250)" ]; then
  # Who it is only names it for the learner: the verdict is the kernel's.
  who=$(ss -ltnpH 'sport = :10250' 2>/dev/null | grep -o 'users:.*' | head -1)
  now_problem "10250 で待ち受けているプロセスがあります${who:+: $who}"
fi
if unit_active_now "$unit" && systemctl show -p ExecStart --value "$unit" 2>/dev/null | grep -qw 10250; then
  now_problem "10250 を使っていたユニットが動いています(状態: $(systemctl is-active "$unit" 2>/dev/null))。プロセスを止めても、ユニットが再起動させます"
fi
if [ "$(boot_unit_state "$unit")" = starts ] && boot_unit_setting "$unit" ExecStart | grep -qw 10250; then
  boot_problem "$unit がまた立ち上がり、10250 を使います(自動起動が有効なままです)"
  for l in $(unit_runtime_links "$unit"); do
    problems+=("($l は /run にあるため、再起動で消えます)")
  done
fi
finish "10250 は空いていて、使っていたユニットは次の起動でも 10250 を使いません。"
