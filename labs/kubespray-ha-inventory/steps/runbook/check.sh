#!/usr/bin/env bash
f=$HA/runbook.md
if [ ! -s "$f" ]; then
  echo "/root/ha/runbook.md がまだありません。"
  exit 1
fi
# First line number matching the regex $1 and not $2.
line_of() { grep -nE -e "$1" "$f" | grep -vE -e "${2:-^$}" | head -1 | cut -d: -f1; }
facts=$(line_of 'facts\.yml' '--limit')
scale=$(line_of 'scale\.yml.*--limit[= ]wk3')
remove=$(line_of 'remove-node\.yml.*node=wk3')
[ -n "$facts" ] || problems+=("playbooks/facts.yml を --limit なしで流す行がありません(ファクトのキャッシュを新しくするため)")
[ -n "$scale" ] || problems+=("scale.yml を --limit wk3 で流す行がありません")
if [ -n "$facts" ] && [ -n "$scale" ] && ((facts > scale)); then problems+=("facts.yml は scale.yml より前に流します(今は後ろに書かれています)"); fi
[ -n "$remove" ] || problems+=("remove-node.yml を -e node=wk3 で流す行がありません")
for n in "$scale" "$remove"; do
  [ -z "$n" ] || sed -n "${n}p" "$f" | grep -q 'inventory.ini' || problems+=("$(sed -n "${n}p" "$f" | head -c 60)… に -i /root/ha/inventory.ini がありません")
done
if [ -n "$remove" ] && ! tail -n +"$((remove + 1))" "$f" | grep -qE 'inventory\.ini|インベントリ'; then
  problems+=("remove-node.yml の後に、wk3 をインベントリから消す手順がありません")
fi
finish "ランブックには、facts.yml → scale.yml --limit wk3、remove-node.yml -e node=wk3 → インベントリから削除、の順で手順が書かれています。"
