#!/usr/bin/env bash
f=/root/who-fixes.txt
if [ ! -s "$f" ]; then
  echo "$f がまだありません。"
  exit 1
fi
declare -A want=([swap]=kubespray [modules]=kubespray [sysctl-zz-override]=human [port-10250]=human)
wrong=()
for key in swap modules sysctl-zz-override port-10250; do
  got=$(sed -n "s/^[[:space:]]*$key[[:space:]]*=[[:space:]]*\([a-z]*\).*/\1/p" "$f" | tail -1)
  if [ -z "$got" ] || [ "$got" = "?" ]; then
    wrong+=("$key の答えがありません(kubespray か human)")
  elif [ "$got" != kubespray ] && [ "$got" != human ]; then
    wrong+=("$key の答え「$got」は kubespray か human のどちらかにしてください")
  elif [ "$got" != "${want[$key]}" ]; then
    wrong+=("$key の答えを見直してください")
  fi
done
if [ ${#wrong[@]} -gt 0 ]; then
  printf '%s\n' "${wrong[@]}"
  exit 1
fi
echo "正解です。kubespray はスワップとモジュールを直しますが、zz- のファイルとポート 10250 は人が直す必要があります。"
