#!/usr/bin/env bash
# A quiz: four keys, each kubespray or human. Read leniently (checklib answer_lines: case, spaces,
# comments, CRLF, full-width characters from an IME), "key=value" or "key: value", _ for -,
# 人 / 人間 for human. Strict in meaning: a key answered twice differently is no answer.
# The feedback says how many answers are wrong and where in the lesson to look, never which key.
f=/root/who-fixes.txt
if [ ! -s "$f" ]; then
  echo "$f がまだありません。"
  exit 1
fi
declare -A want=([swap]=kubespray [modules]=kubespray [sysctl-zz-override]=human [port-10250]=human)
declare -A got=()
while IFS= read -r line; do
  [[ $line =~ ^([a-z0-9_-]+)\ ?[=:]\ ?(.*)$ ]] || continue
  key=${BASH_REMATCH[1]//_/-}
  value=${BASH_REMATCH[2]}
  case $value in 人 | 人間 | ひと) value=human ;; esac
  [ -n "${want[$key]:-}" ] || continue
  if [ -n "${got[$key]:-}" ] && [ "${got[$key]}" != "$value" ]; then got[$key]="(2 つの答え)"; else got[$key]=$value; fi
done < <(answer_lines "$f")
wrong=0
for key in swap modules sysctl-zz-override port-10250; do
  value=${got[$key]:-}
  if [ -z "$value" ] || [ "$value" = "?" ]; then
    problems+=("$key の答えがありません(kubespray か human)")
  elif [ "$value" = "(2 つの答え)" ]; then
    problems+=("$key に違う答えが 2 つあります。1 つにしてください")
  elif [ "$value" != kubespray ] && [ "$value" != human ]; then
    problems+=("$key の答え「$value」は kubespray か human のどちらかにしてください")
  elif [ "$value" != "${want[$key]}" ]; then
    wrong=$((wrong + 1))
  fi
done
if [ "$wrong" -gt 0 ]; then
  problems+=("4 つのうち $wrong つの答えが違います。レッスンの「kubespray が自動で処理するもの」「kubespray が手を出さないもの: ポート」「このラボのマシンに残されているもの」を読み直してください")
fi
finish "正解です。kubespray はスワップとモジュールを直しますが、zz- のファイルとポート 10250 は人が直す必要があります。"
