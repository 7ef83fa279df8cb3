#!/usr/bin/env bash
problems=()
for m in overlay br_netfilter; do
  [ -d "/sys/module/$m" ] || problems+=("$m が今読み込まれていません(modprobe $m)")
  boot_module "$m" || problems+=("$m が起動時に読み込まれる設定になっていません(/etc/modules-load.d/)")
done
if [ ${#problems[@]} -gt 0 ]; then
  printf '%s\n' "${problems[@]}"
  exit 1
fi
echo "overlay と br_netfilter は読み込まれていて、起動時にも読み込まれます。"
