#!/usr/bin/env bash
# The check runs kubespray's inventory validation itself (kubespray_run, the same command as the
# step) and grades that run: every host failed=0 unreachable=0, validate_inventory's "Stop if even
# number of etcd hosts" among its tasks. The learner's /root/ha/validate.log is accepted when its
# tasks, fatal: lines and RECAP rows equal that run (run_facts): saved with tee or >, with or
# without 2>&1 or -v, with -e ansible_connection=local or -c local. Refused: a log typed or edited
# by hand (a RECAP with failed=0 that the run does not print), a log from an older inventory.
log=$HA/validate.log
if [ ! -s "$log" ]; then
  echo "/root/ha/validate.log がまだありません。検査の出力を tee で保存してください。"
  exit 1
fi
own=$(kubespray_run -i "$HA/inventory.ini" playbooks/boilerplate.yml -e ansible_connection=local | run_facts)
if ! grep -q '^PLAY RECAP' <<<"$own"; then
  problems+=("検査(ansible-playbook -i /root/ha/inventory.ini playbooks/boilerplate.yml -e ansible_connection=local)が ${RUN_SECONDS} 秒以内に最後まで進みません。自分で流して出力を読んでください")
else
  grep -q 'Stop if even number of etcd hosts' <<<"$own" ||
    problems+=("kubespray のインベントリ検査(validate_inventory の「Stop if even number of etcd hosts」)が流れていません。playbooks/boilerplate.yml ですか")
  bad=$(failed_hosts <<<"$own")
  [ -z "$bad" ] || problems+=("検査に失敗したホストがあります: $bad(検査をもう一度流して fatal: の行を読んでください。ssh しようとしたなら -e ansible_connection=local が抜けています)")
  [ "$(run_facts "$log")" = "$own" ] ||
    problems+=("validate.log が、今の /root/ha のインベントリで検査を流した結果と違います(タスクか PLAY RECAP の行)。もう一度流して、その出力をそのまま保存してください")
fi
inv_load "$HA/inventory.ini"
etcd=$(inv_members "$HA/inventory.ini" | hosts_of etcd | wc -w)
((etcd % 2 == 1)) || problems+=("今の /root/ha のインベントリは etcd が $etcd 台(偶数)です。3 台に戻してください")
finish "ssh なしで kubespray のインベントリ検査に通りました(validate.log)。"
