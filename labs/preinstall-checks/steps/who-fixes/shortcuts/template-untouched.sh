#!/usr/bin/env bash
# The template copied as it is.
# expect-output: swap の答えがありません
printf 'swap=?\nmodules=?\nsysctl-zz-override=?\nport-10250=?\n' >/root/who-fixes.txt
