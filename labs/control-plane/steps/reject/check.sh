#!/usr/bin/env bash
bad=/root/bad-backup.yaml
good=$(kubectl -n shop get backup nightly -o 'jsonpath={.spec.schedule}|{.spec.retentionDays}' 2>/dev/null)
[ -n "$good" ] || problems+=("名前空間 shop に Backup nightly がありません")
if [ ! -s "$bad" ]; then
  problems+=("/root/bad-backup.yaml がありません")
else
  out=$(kubectl create --dry-run=server -f "$bad" 2>&1) && rc=0 || rc=$?
  if [ "$rc" = 0 ]; then
    problems+=("/root/bad-backup.yaml を API サーバーが受け付けてしまいます。retentionDays を範囲の外(たとえば 90)にしてください")
  elif [[ $out != *"is invalid"* ]]; then
    problems+=("/root/bad-backup.yaml はスキーマ検証以外の理由で断られています: $(head -c 200 <<<"$out")")
  fi
fi
grep -qs 'is invalid' "/root/reject.txt" ||
  problems+=("/root/reject.txt に、API サーバーが返した拒否のメッセージ(... is invalid: ...)がありません")
finish "スキーマに合わない Backup は API サーバーの入口で拒まれ、正しい Backup nightly は保存されました。"
