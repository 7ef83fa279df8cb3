#!/usr/bin/env bash
# kubespray's way (roles/kubernetes/preinstall/tasks/0010-swapoff.yml): swap.target masked, the fstab line kept.
# reboot: yes
swapoff -a
systemctl mask swap.target
