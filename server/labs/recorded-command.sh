#!/usr/bin/env bash
# TEST FAKE for tests against RECORDED command outputs (server/labs/course-labs.int.test.ts): the
# test puts symlinks named kubectl, systemctl, ip, curl ... to this script in a directory it lays
# over /usr/sbin and /usr/bin (the checks' fixed PATH) and binds writable over /usr/local/bin,
# with recording.txt beside them. It
# prints the recorded output whose header in recording.txt is exactly this command line:
#
#   ### kubectl get node node01 -o jsonpath={.spec.unschedulable}
#   true
#   ### rc=3 systemctl is-active kubelet
#   inactive
#   ### rc=1 >&2 kubectl -n kube-flannel get daemonset kube-flannel-ds ...
#   Error from server (NotFound): daemonsets.apps "kube-flannel-ds" not found
#
# `rc=N` is the exit status; `>&2` in the header sends the whole output to stderr; an output line
# that starts with `>&2 ` goes to stderr alone (a warning beside stdout: kubectl's `Warning: ...`). The check sees the fake root at the
# real paths (a mount namespace), so recordings name real paths. A command line with no recording
# is appended to misses.txt in /usr/local/bin (the fakes' directory, writable there) and exits 127,
# which fails the test.
name=${0##*/}
here=/usr/local/bin
want="$name${*:+ $*}"
found=0 rc=0 err=0 out="" errout=""
while IFS= read -r line || [ -n "$line" ]; do
  if [[ $line == "### "* ]]; then
    ((found)) && break
    header=${line#"### "} r=0 e=0
    if [[ $header =~ ^rc=([0-9]+)\ (\>\&2\ )?(.*)$ ]]; then r=${BASH_REMATCH[1]} header=${BASH_REMATCH[3]}; [ -z "${BASH_REMATCH[2]}" ] || e=1; fi
    if [ "$header" = "$want" ]; then found=1 rc=$r err=$e; fi
    continue
  fi
  if ((found)); then
    if [[ $line == ">&2 "* ]]; then errout+="${line#">&2 "}"$'\n'; else out+="$line"$'\n'; fi
  fi
done <"$here/recording.txt"
if ((!found)); then
  echo "recorded-command: no recorded output for: $want" >&2
  echo "$want" >>"$here/misses.txt"
  exit 127
fi
printf '%s' "$errout" >&2
if ((err)); then printf '%s' "$out" >&2; else printf '%s' "$out"; fi
exit "$rc"
