#!/usr/bin/env bash
# Judged by the API server: the check asks it itself (create --dry-run=server) whether
# bad-backup.yaml is refused by the schema, and whether Backup nightly exists. /root/reject.txt is
# accepted when it holds the server's own reasons for the refusal (saved from kubectl apply or
# create, with 2>&1 | tee or 2> file); a hand-typed "... is invalid" line is refused.
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
# The reasons the API server gives now (after "is invalid: "): kubectl apply and create prefix the
# message differently ("The Backup ..." / "Error from server (Invalid): error when creating ..."),
# the field-level reasons are the server's own words, so reject.txt must contain them.
why=$(grep -m1 'is invalid: ' <<<"${out:-}" | sed 's/.*is invalid: //')
if ! grep -qs 'is invalid' "/root/reject.txt"; then
  problems+=("/root/reject.txt に、API サーバーが返した拒否のメッセージ(... is invalid: ...)がありません")
elif [ -n "$why" ] && ! sed 's/\r$//' /root/reject.txt | grep -qF -- "$why"; then
  problems+=("/root/reject.txt の拒否のメッセージが、今 API サーバーが /root/bad-backup.yaml に返す理由(${why:0:160})と違います。kubectl apply -f /root/bad-backup.yaml 2>&1 | tee /root/reject.txt でもう一度保存してください")
fi
finish "スキーマに合わない Backup は API サーバーの入口で拒まれ、正しい Backup nightly は保存されました。"
