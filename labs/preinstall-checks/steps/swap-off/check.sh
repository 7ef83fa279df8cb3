#!/usr/bin/env bash
problems=()
active=$(swapon --show --noheadings 2>/dev/null | awk '{print $1}' | paste -sd, -)
[ -z "$active" ] || problems+=("今もスワップが有効です: $active(swapoff で止められます)")
atboot=$(boot_swap | awk '{print $1}' | paste -sd, -)
[ -z "$atboot" ] || problems+=("/etc/fstab にスワップの行が残っているため、再起動すると有効に戻ります: $atboot")
if [ ${#problems[@]} -gt 0 ]; then
  printf '%s\n' "${problems[@]}"
  exit 1
fi
echo "スワップは今も無効で、/etc/fstab からも有効になりません。"
