# Labdeck check helpers: the grader puts this in front of every check and solution script.
# "Now" is easy (sysctl -n, swapon, lsmod); these read what the machine will do at its next
# boot, so a step can require "and it stays so after a reboot" without rebooting.

# The *.conf files a systemd "conf.d" reader applies, in the order it applies them: a file name in
# an earlier directory masks the same name in later ones, and files are read sorted by name.
# Usage: conf_files DIR...   (directories in priority order, highest first)
conf_files() {
  local dir f name
  declare -A chosen=()
  for dir in "$@"; do
    for f in "$dir"/*.conf; do
      [ -e "$f" ] || continue
      name=${f##*/}
      [ -n "${chosen[$name]:-}" ] || chosen[$name]=$f
    done
  done
  for name in $(printf '%s\n' "${!chosen[@]}" | LC_ALL=C sort); do
    echo "${chosen[$name]}"
  done
}

# sysctl.d(5) directories, highest priority first.
SYSCTL_DIRS=(/etc/sysctl.d /run/sysctl.d /usr/local/lib/sysctl.d /usr/lib/sysctl.d /lib/sysctl.d)

# Every sysctl that systemd-sysctl applies at boot, as "key=value", the last file winning.
# Keys may use / or . as separator; a leading - (ignore errors) is dropped.
boot_sysctl_all() {
  local f
  for f in $(conf_files "${SYSCTL_DIRS[@]}"); do
    [ -s "$f" ] || continue # an empty file (or /dev/null symlink) masks without setting anything
    awk '
      /^[[:space:]]*([#;]|$)/ { next }
      {
        line = $0; eq = index(line, "="); if (eq == 0) next
        key = substr(line, 1, eq - 1); value = substr(line, eq + 1)
        gsub(/^[[:space:]]+|[[:space:]]+$/, "", key); gsub(/^[[:space:]]+|[[:space:]]+$/, "", value)
        sub(/^-/, "", key); gsub(/\//, ".", key)
        print key "=" value
      }' "$f"
  done
}

# The value KEY gets at boot (empty when no file sets it). Example: boot_sysctl net.ipv4.ip_forward
boot_sysctl() {
  boot_sysctl_all | awk -F= -v k="$1" '$1 == k { v = substr($0, length(k) + 2) } END { if (v != "") print v }'
}

# Which file sets KEY last at boot (to tell the learner where the override is).
boot_sysctl_source() {
  local f last=""
  for f in $(conf_files "${SYSCTL_DIRS[@]}"); do
    if sed -e 's/[[:space:]]//g' -e 's#/#.#g' -e 's/^-//' "$f" 2>/dev/null | grep -q "^$1="; then last=$f; fi
  done
  [ -n "$last" ] && echo "$last"
}

# fstab swap entries that are activated at boot (not commented out, not noauto), one per line.
boot_swap() {
  awk '!/^[[:space:]]*#/ && NF >= 3 && $3 == "swap" && ($4 == "" || $4 !~ /(^|,)noauto(,|$)/)' "/etc/fstab" 2>/dev/null
}

# Modules systemd-modules-load loads at boot (modules-load.d(5) plus /etc/modules), one per line.
boot_modules() {
  { for f in $(conf_files /etc/modules-load.d /run/modules-load.d /usr/local/lib/modules-load.d /usr/lib/modules-load.d /lib/modules-load.d) "/etc/modules"; do
      [ -f "$f" ] && cat "$f"
    done; } 2>/dev/null |
    sed -e 's/[#;].*//' -e 's/[[:space:]]//g' | grep -v '^$' | sort -u
}

# True when MODULE is loaded at boot. Example: boot_module br_netfilter || echo "not at boot"
boot_module() {
  boot_modules | grep -qx -- "$1"
}

# True when the systemd unit starts at boot (enabled, enabled-runtime, static with a wanted-by link, ...).
unit_enabled() {
  case "$(systemctl is-enabled -- "$1" 2>/dev/null)" in
    enabled | enabled-runtime | alias | linked) return 0 ;;
    *) return 1 ;;
  esac
}

# Feedback: a check collects what is still wrong in `problems` (one line each, for the learner)
# and ends with `finish "all good message"`: exit 1 printing the problems, or exit 0 with it.
problems=()
finish() {
  if [ ${#problems[@]} -gt 0 ]; then printf '%s\n' "${problems[@]}"; exit 1; fi
  echo "$1"
}
