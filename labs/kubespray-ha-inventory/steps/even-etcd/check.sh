#!/usr/bin/env bash
# Judged by the inventories (ansible-inventory: etcd even in /root/ha-even, still 3 in /root/ha) and
# by the check's own validation run on /root/ha-even, which must stop with fatal: at "Stop if even
# number of etcd hosts". Any way to make etcd even counts ([etcd] cp1 cp2, [etcd] with host
# ranges, a YAML inventory). /root/ha-even/validate.log is accepted when its tasks, fatal: lines
# and RECAP rows equal that run (saved with tee, >, 2>&1, -v); a hand-typed fatal: line is not.
even=/root/ha-even
if [ ! -f "$even/inventory.ini" ]; then
  echo "/root/ha-even/inventory.ini がまだありません。/root/ha を /root/ha-even にコピーして、etcd を 2 台にしてください。"
  exit 1
fi
inv_load "$even/inventory.ini"; inv_load "$HA/inventory.ini"
n=$(inv_members "$even/inventory.ini" | hosts_of etcd | wc -w)
if ((n == 0 || n % 2 == 1)); then problems+=("/root/ha-even のインベントリは etcd が $n 台です。偶数(2 台)にしてください"); fi
orig=$(inv_members "$HA/inventory.ini" | hosts_of etcd | wc -w)
[ "$orig" = 3 ] || problems+=("元の /root/ha のインベントリまで etcd が $orig 台になっています。変えるのは /root/ha-even のコピーだけです")
log=$even/validate.log
# The validation run's facts stop at that task with a fatal: line (run_facts output, stdin).
stops_at_even() { awk '/^TASK \[.*Stop if even number of etcd hosts\]/ { t = 1; next } t && /^TASK|^PLAY/ { exit 1 } t && /^fatal:/ { f = 1 } END { exit !f }'; }
if [ ! -s "$log" ]; then
  problems+=("/root/ha-even/validate.log がありません。コピーしたインベントリでも検査を流して保存してください")
elif ! run_facts "$log" | stops_at_even; then
  problems+=("/root/ha-even/validate.log に「Stop if even number of etcd hosts」で止まった記録(fatal:)がありません")
elif ((n > 0 && n % 2 == 0)); then
  own=$(kubespray_run -i "$even/inventory.ini" playbooks/boilerplate.yml -e ansible_connection=local | run_facts)
  [ "$(run_facts "$log")" = "$own" ] ||
    problems+=("/root/ha-even/validate.log が、今の /root/ha-even のインベントリで検査を流した結果と違います(タスク・fatal:・PLAY RECAP の行)。もう一度流して、その出力をそのまま保存してください")
fi
finish "etcd を 2 台にすると、kubespray は「Stop if even number of etcd hosts」で止まりました。"
