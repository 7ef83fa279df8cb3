#!/usr/bin/env bash
unit=legacy-metrics-agent.service
problems=()
listener=$(ss -ltnpH 'sport = :10250' 2>/dev/null)
[ -z "$listener" ] || problems+=("まだ 10250 で待ち受けているプロセスがあります: $(echo "$listener" | grep -o 'users:.*' | head -1)")
state=$(systemctl is-active "$unit" 2>/dev/null)
case "$state" in
  active | activating | reloading) problems+=("10250 を使っていたユニットが動いています(状態: $state)。プロセスを止めても、ユニットが再起動させます") ;;
esac
unit_enabled "$unit" && problems+=("10250 を使っていたユニットは、次の起動でまた立ち上がります(enabled のまま)")
if [ ${#problems[@]} -gt 0 ]; then
  printf '%s\n' "${problems[@]}"
  exit 1
fi
echo "10250 は空いていて、使っていたユニットは停止・無効化されています。"
