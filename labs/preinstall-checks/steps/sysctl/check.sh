#!/usr/bin/env bash
problems=()
for key in net.ipv4.ip_forward net.bridge.bridge-nf-call-iptables; do
  now=$(sysctl -n "$key" 2>/dev/null)
  if [ -z "$now" ]; then
    problems+=("$key が見つかりません(br_netfilter は読み込まれていますか?)")
  elif [ "$now" != 1 ]; then
    problems+=("今の $key は $now です(1 にしてください)")
  fi
  boot=$(boot_sysctl "$key")
  if [ "$boot" != 1 ]; then
    src=$(boot_sysctl_source "$key")
    if [ -n "$src" ]; then
      problems+=("再起動すると $key は ${boot} になります。最後にこの値を設定しているのは $src です")
    else
      problems+=("$key を起動時に 1 にする設定ファイルがありません(/etc/sysctl.d/)")
    fi
  fi
done
if [ ${#problems[@]} -gt 0 ]; then
  printf '%s\n' "${problems[@]}"
  exit 1
fi
echo "ip_forward と bridge-nf-call-iptables は今も 1 で、再起動後も 1 のままです。"
