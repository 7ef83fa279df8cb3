# apt-get that waits for a busy package manager (unattended-upgrades on a fresh machine, another
# apt in a second terminal) instead of failing, and says that it waits. Sourced by
# scripts/install-deps.sh.
#
# apt itself waits only for the dpkg lock (-o DPkg::Lock::Timeout, apt >= 1.9.11), silently;
# `apt-get update` takes the lists lock (/var/lib/apt/lists/lock), for which apt has no wait
# option (apt 2.6.1 fails at once; DPkg::Lock::Timeout does not apply to it). So each attempt
# lets apt wait a few seconds for the dpkg lock, and an attempt that failed on a held lock is
# made again, for up to APT_LOCK_WAIT_S seconds.

# Seconds; a package manager busy for longer is reported instead of waited for.
APT_LOCK_WAIT_S=${APT_LOCK_WAIT_S:-900}

# apt_get ARGS...: apt-get ARGS with the waiting above; its stdout goes to /dev/null, its
# messages to stderr once it is done.
apt_get() {
  local deadline=$((SECONDS + APT_LOCK_WAIT_S)) said=0 status out holder
  while :; do
    status=0
    out=$(apt-get -o DPkg::Lock::Timeout=5 "$@" 2>&1 >/dev/null) || status=$?
    if ((status == 0)); then
      [[ -z $out ]] || printf '%s\n' "$out" >&2
      return 0
    fi
    if ! grep -q 'Could not get lock' <<<"$out" || ((SECONDS >= deadline)); then
      printf '%s\n' "$out" >&2
      ((status != 0 && SECONDS >= deadline)) && grep -q 'Could not get lock' <<<"$out" &&
        echo "labdeck: another package manager kept its lock for ${APT_LOCK_WAIT_S} s; let it finish (ps -e | grep -E 'apt|dpkg') and run this again" >&2
      return "$status"
    fi
    if ((!said)); then
      holder=$(grep -o 'held by process [0-9]* ([^)]*)' <<<"$out" | head -1)
      echo "==> waiting for another package manager to finish (${holder:-lock busy}); up to ${APT_LOCK_WAIT_S} s"
      said=1
    fi
    sleep 2
  done
}
