#!/usr/bin/env bash
# kubespray's file name, CRLF and a comment line, loaded by systemd-modules-load itself.
printf '# for Kubernetes\r\noverlay\r\nbr_netfilter\r\n' >/etc/modules-load.d/kubespray-br_netfilter.conf
systemctl restart systemd-modules-load.service
