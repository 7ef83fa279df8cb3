#!/usr/bin/env bash
flag=$(kubectl get node node01 -o 'jsonpath={.spec.unschedulable}' 2>/dev/null)
[ "$flag" = true ] || problems+=("node01 はまだスケジュール可能です(cordon されていません)")
pods=$(web_pods)
on01=$(awk '$2 == "node01" { print $1 }' <<<"$pods" | paste -sd, -)
[ -z "$on01" ] || problems+=("node01 にまだ web の Pod があります: $on01(kubectl drain node01 --ignore-daemonsets)")
count=$(awk '$4 == "Running"' <<<"$pods" | wc -l)
((count >= 2)) || problems+=("web の Pod が ${count} 個しか動いていません。追い出された Pod がほかのノードで動き出すのを待ってください")
finish "node01 は空になり、web の Pod は node02 に移って動いています。"
