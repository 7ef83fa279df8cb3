#!/usr/bin/env bash
# Capitalised answers, spaces around =, comments, CRLF.
printf '# who fixes what\r\nSwap = Kubespray\r\nModules = KUBESPRAY   # node role\r\n\r\nsysctl-zz-override = Human\r\nPort-10250 = Human\r\n' >/root/who-fixes.txt
