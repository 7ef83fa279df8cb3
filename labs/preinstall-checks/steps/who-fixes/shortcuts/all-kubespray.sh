#!/usr/bin/env bash
# Everything left to kubespray: two wrong, and the feedback must not say which.
# expect-output: 4 つのうち 2 つの答えが違います
printf 'swap=kubespray\nmodules=kubespray\nsysctl-zz-override=kubespray\nport-10250=kubespray\n' >/root/who-fixes.txt
