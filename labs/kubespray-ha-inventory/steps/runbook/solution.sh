#!/usr/bin/env bash
cat >"/root/ha/runbook.md" <<'MD'
# ワーカーの追加と削除(kubespray)

## 追加: wk3
1. inventory.ini の [kube_node] に wk3 を足し、host_vars/wk3.yml に ansible_host と ip を書く
2. ファクトのキャッシュを新しくする(--limit なし)
   ansible-playbook -i /root/ha/inventory.ini playbooks/facts.yml
3. wk3 だけに kubelet を載せる
   ansible-playbook -i /root/ha/inventory.ini scale.yml --limit wk3

## 削除: wk3
1. ansible-playbook -i /root/ha/inventory.ini remove-node.yml -e node=wk3
2. 終わったら inventory.ini と host_vars から wk3 を消す

## メモ
- etcd は奇数(3 台で 1 台まで耐える。4 台にしても耐えられる数は同じ)
- ワーカーは各ノードの nginx(localhost:6443)経由で全 API サーバーに届く
MD
