#!/usr/bin/env bash
state=$(systemctl is-active kubelet 2>/dev/null)
[ "$state" = active ] || problems+=("node02 の kubelet が動いていません(状態: ${state:-不明})。systemctl status kubelet と journalctl -u kubelet を見てください")
unit_enabled kubelet || problems+=("node02 の kubelet は enable されていません。今は動いていても、次に再起動するとまた戻ってきません")
ready=$(kubectl --kubeconfig="/etc/kubernetes/kubelet.conf" get node node02 -o 'jsonpath={.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null)
[ "$ready" = True ] || problems+=("node02 はまだ Ready ではありません(今: ${ready:-不明})")
finish "node02 の kubelet は動いていて、起動時にも立ち上がります。node02 は Ready です。"
