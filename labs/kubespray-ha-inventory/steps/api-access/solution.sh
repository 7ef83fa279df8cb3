#!/usr/bin/env bash
printf 'loadbalancer_apiserver_localhost=true\nloadbalancer_apiserver_type=nginx\nkube_apiserver_port=6443\n' >"/root/ha/api-access.txt"
