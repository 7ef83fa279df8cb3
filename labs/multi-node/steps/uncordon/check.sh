#!/usr/bin/env bash
flag=$(kubectl get node node01 -o 'jsonpath={.spec.unschedulable}' 2>/dev/null)
[ -z "$flag" ] || [ "$flag" = false ] || problems+=("node01 はまだ cordon されたままです(kubectl uncordon node01)")
f=/root/after-uncordon.txt
if [ ! -s "$f" ]; then
  problems+=("/root/after-uncordon.txt がありません。uncordon の後に kubectl get pods -l app=web -o wide の出力を保存してください")
elif ! grep -q '^web-' "$f"; then
  problems+=("/root/after-uncordon.txt に web の Pod の行がありません")
fi
finish "node01 は戻りました。web の Pod は node02 にいたままです。スケジューラーが判断するのは新しい Pod を置くときだけだからです。"
