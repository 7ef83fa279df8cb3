#!/usr/bin/env bash
# Now: no swap in use, as the kernel says (/proc/swaps, and SwapTotal in /proc/meminfo, neither
# covered by a mount; not `swapon`, which a stand-in could answer for). After a boot: nothing turns
# swap on (checklib boot_swap: /etc/fstab lines, .swap units, swapon from a service or any script
# it runs, rc.local, cron @reboot ...). On the reboot proof's new boot the "now" half is the
# kernel's word on what that boot did, whatever the scan missed.
# Correct ways, each accepted:
#  - swapoff -a, and the fstab line commented out (the lesson's way) or deleted, or given noauto;
#  - swapoff -a, and swap.target masked with the fstab line kept (kubespray's 0010-swapoff.yml);
#  - swapoff -a, and the line's own unit masked (systemctl mask swapfile.swap).
# Refused: swapoff alone; a runtime mask (mask --runtime: /run is gone at boot); the fstab line
# commented while the swap is still on.
# The boot files too: the reboot proof reads them, and takes no new boot from covered ones.
kernel_view_problems /proc/swaps /proc/meminfo /proc/uptime /proc/sys/kernel/random/boot_id
active=$(swap_now | paste -sd, -)
total=$(swap_total_kb)
if [ -n "$active" ]; then
  now_problem "スワップが有効です: $active(swapoff で止められます)"
elif [ "${total:-0}" != 0 ]; then
  now_problem "スワップが有効です(/proc/meminfo の SwapTotal: ${total} kB。swapoff -a で止められます)"
fi
while IFS=$'\t' read -r what how; do
  [ -n "$what" ] || continue
  case $how in
    /etc/fstab*) boot_problem "$what が有効に戻ります。/etc/fstab の行が残っています(行をコメントアウトするか、swap.target をマスクします)" ;;
    *) boot_problem "$what が有効に戻ります($how)" ;;
  esac
done < <(boot_swap)
if [ ${#problems[@]} -gt 0 ]; then
  for l in $(unit_runtime_links swap.target) $(for w in $(boot_swap_fstab); do unit_runtime_links "$(swap_unit_name "$w")"; done); do
    problems+=("($l は /run にあるため、再起動で消えます。mask --runtime ではなく mask を使います)")
  done
fi
finish "スワップは今も無効で、次の起動でも有効になりません。"
