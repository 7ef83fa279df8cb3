#!/usr/bin/env bash
{ echo "# メンバー 過半数 耐えられる障害の数"; for n in 1 2 3 4 5 6 7; do echo "$n $((n / 2 + 1)) $((n - n / 2 - 1))"; done; } >"/root/ha/quorum.txt"
