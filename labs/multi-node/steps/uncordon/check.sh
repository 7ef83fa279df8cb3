#!/usr/bin/env bash
# node01 schedulable again (spec.unschedulable empty or false: kubectl uncordon, or kubectl patch /
# edit), and the saved listing matches the cluster: each live web Pod's name and node appear in it
# (kubectl get pods -l app=web -o wide, with or without --no-headers, saved with tee or >).
# Refused: a listing typed by hand (the Pod names' random suffixes are the cluster's).
flag=$(kubectl get node node01 -o 'jsonpath={.spec.unschedulable}' 2>/dev/null)
[ -z "$flag" ] || [ "$flag" = false ] || problems+=("node01 はまだ cordon されたままです(kubectl uncordon node01)")
f=/root/after-uncordon.txt
if [ ! -s "$f" ]; then
  problems+=("/root/after-uncordon.txt がありません。uncordon の後に kubectl get pods -l app=web -o wide の出力を保存してください")
else
  # The Pod names carry random suffixes only the cluster knows: every live web Pod must have its
  # row (NAME first, as kubectl get pods prints it, -o wide or not), on the node it runs on now.
  while read -r name node _; do
    [ -n "$name" ] || continue
    awk -v p="$name" -v n="$node" '$1 == p { for (i = 2; i <= NF; i++) if ($i == n) f = 1 } END { exit !f }' "$f" ||
      problems+=("/root/after-uncordon.txt に、今ある web の Pod $name($node)の行がありません。uncordon の後に kubectl get pods -l app=web -o wide の出力を保存してください")
  done <<<"$(web_pods)"
fi
finish "node01 は戻りました。web の Pod は node02 にいたままです。スケジューラーが判断するのは新しい Pod を置くときだけだからです。"
