#!/usr/bin/env bash
# Typed with a Japanese IME: full-width letters, ＝ and ：, the long-vowel mark for -, 人 for human, _ for -.
printf 'ｓｗａｐ＝ｋｕｂｅｓｐｒａｙ\nmodules：kubespray\nsysctl_zz_override　＝　人\nport－10250＝human\n' >/root/who-fixes.txt
