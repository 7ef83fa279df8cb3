# Labdeck check helpers: the grader puts this in front of every check and solution script.
# Two questions, kept apart:
#   "now"          the live system, as the kernel says it: /proc/swaps, /proc/sys, /proc/net/tcp,
#                  /sys/module (kernel_view_problems: no mount laid over them), systemctl is-active.
#   "after a boot" what systemd and the kernel will READ at the next boot, from files that survive
#                  it. /run is a tmpfs, empty at boot: nothing under /run counts (a runtime mask, an
#                  enable --runtime, /run/sysctl.d, /run/modules-load.d are true only until then).
# Checks ask both and say which half fails (now_problem / boot_problem, at the end). A reboot proof
# (verifyByReboot) runs the same check on the new boot, whose "now" half is then the kernel's word
# on what the boot really did: it catches whatever the boot scan below cannot see.
#
# Tools: only the image's own. The grader's PATH starts with /usr/local, which root fills by hand
# (a stand-in `swapon` there once answered for the real one); checks get the directories the
# distribution's packages own, and the live half reads /proc and /sys with shell builtins wherever
# it can. Not defended: root replacing the packages' own programs (/usr/bin/awk, /bin/bash).
PATH=/usr/sbin:/usr/bin:/sbin:/bin
export PATH
#
# Covered at boot: swap from /etc/fstab (systemd-fstab-generator: each line's .swap unit, pulled in
# by swap.target) and .swap unit files, cut off by a persistent mask of the unit or of swap.target;
# swap turned on by other means: an enabled unit whose Exec*= lines, or any text file they name
# (any path, and the files those name, up to EXEC_FOLLOW_DEPTH levels), call swapon; an executable
# /etc/rc.local (systemd-rc-local-generator), cron @reboot lines, SysV scripts linked in
# /etc/rc[S2-5].d, and zram-generator's config, each followed the same way. Not seen: swapon hidden
# from text (built from pieces, a compiled program), deeper than EXEC_FOLLOW_DEPTH,
# systemd-gpt-auto-generator (GPT + EFI only; lab VMs boot direct from a partitionless disk), units
# pulled in by D-Bus activation: the reboot proof's kernel view judges those. Units: enablement from
# the persistent unit directories only (*.wants/*.requires/*.upholds links and Wants=/Requires=
# lines), aliases, templates, masks (a /dev/null link or an empty file).

# ---------------------------------------------------------------- the kernel's own view
# Where FILE (under /proc or /sys) is not what the kernel serves, one line: a mount laid over it or
# a directory above it (mount --bind /tmp/fake /proc/swaps), or a file system that is not procfs /
# sysfs there. Nothing printed: the kernel's. Mounts are read from /proc/self/mountinfo, which
# belongs to this shell's own process (no mount made earlier can name it).
kernel_view_covered() {
  local file want _id _parent _dev _root mnt rest fstype why
  for file in "$@"; do
    case $file in /proc/*) want=proc ;; /sys/*) want=sysfs ;; *) continue ;; esac
    why=""
    while read -r _id _parent _dev _root mnt rest; do
      fstype=${rest#* - }; fstype=${fstype%% *}
      [ "$file" = "$mnt" ] || [ "${file#"$mnt"/}" != "$file" ] || continue # not above FILE
      case $mnt in
        /proc | /sys) [ "$fstype" = "$want" ] || why="$mnt: $fstype" ;;
        *) why=$mnt ;;
      esac
    done </proc/self/mountinfo
    if [ -z "$why" ]; then
      fstype=$(stat -f -c %T -- "$file" 2>/dev/null)
      [ -z "$fstype" ] || [ "$fstype" = "$want" ] || why=$fstype
    fi
    [ -z "$why" ] || echo "$file ($why)"
  done
}

# now_problem for each FILE the kernel does not serve (see kernel_view_covered).
kernel_view_problems() {
  local line
  while IFS= read -r line; do
    [ -n "$line" ] && now_problem "${line%% *} はカーネルの内容ではありません(上に別のものがマウントされています: ${line#* }。umount してください)"
  done < <(kernel_view_covered "$@")
  return 0
}

# The *.conf files a systemd "conf.d" reader applies, in the order it applies them: a file name in
# an earlier directory masks the same name in later ones, and files are read sorted by name.
# Usage: conf_files DIR...   (directories in priority order, highest first)
conf_files() {
  local dir f name
  declare -A chosen=()
  for dir in "$@"; do
    for f in "$dir"/*.conf; do
      [ -e "$f" ] || [ -L "$f" ] || continue
      name=${f##*/}
      [ -n "${chosen[$name]:-}" ] || chosen[$name]=$f
    done
  done
  for name in $(printf '%s\n' "${!chosen[@]}" | LC_ALL=C sort); do
    echo "${chosen[$name]}"
  done
}

# ---------------------------------------------------------------- sysctl (sysctl.d(5))
# What `sysctl --system` reads now, highest priority first (procps also reads /etc/sysctl.conf last).
SYSCTL_DIRS=(/etc/sysctl.d /run/sysctl.d /usr/local/lib/sysctl.d /usr/lib/sysctl.d /lib/sysctl.d)
# What systemd-sysctl reads at boot: the same without /run (empty at boot). /etc/sysctl.conf is read
# only through Debian's /etc/sysctl.d/99-sysctl.conf symlink, hence under that name.
SYSCTL_BOOT_DIRS=(/etc/sysctl.d /usr/local/lib/sysctl.d /usr/lib/sysctl.d /lib/sysctl.d)

# Every sysctl that systemd-sysctl applies at boot, as "key=value", the last file winning.
# Keys may use / or . as separator; a leading - (ignore errors) is dropped.
boot_sysctl_all() {
  local f
  for f in $(conf_files "${SYSCTL_BOOT_DIRS[@]}"); do
    [ -s "$f" ] || continue # an empty file (or /dev/null symlink) masks without setting anything
    awk '
      /^[[:space:]]*([#;]|$)/ { next }
      {
        line = $0; sub(/\r$/, "", line); eq = index(line, "="); if (eq == 0) next
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
  for f in $(conf_files "${SYSCTL_BOOT_DIRS[@]}"); do
    if sed -e 's/[[:space:]]//g' -e 's#/#.#g' -e 's/^-//' "$f" 2>/dev/null | grep -q "^$1="; then last=$f; fi
  done
  [ -n "$last" ] && echo "$last"
}

# The value KEY has now, from /proc/sys (empty when the kernel has no such key).
sysctl_now() {
  local f=/proc/sys/${1//.//} v
  [ -r "$f" ] || return 0
  read -r v <"$f" && printf '%s\n' "$v"
}

# Files under /run/sysctl.d that set KEY: applied by `sysctl --system` now, gone at boot.
run_sysctl_files() {
  local f
  for f in /run/sysctl.d/*.conf; do
    [ -f "$f" ] && sed -e 's/[[:space:]]//g' -e 's#/#.#g' -e 's/^-//' "$f" | grep -q "^$1=" && echo "$f"
  done
  return 0
}

# ---------------------------------------------------------------- kernel modules (modules-load.d(5))
# Read at boot by systemd-modules-load: no /run. Debian's /etc/modules is read only through its
# /etc/modules-load.d/modules.conf symlink; modules_load= on the kernel command line also counts
# (lab VMs boot their kernel directly, so the next boot gets the same line).
MODULES_BOOT_DIRS=(/etc/modules-load.d /usr/local/lib/modules-load.d /usr/lib/modules-load.d /lib/modules-load.d)

# Modules systemd-modules-load loads at boot, one per line.
boot_modules() {
  { for f in $(conf_files "${MODULES_BOOT_DIRS[@]}"); do
      [ -f "$f" ] && cat "$f"
    done
    tr ' ' '\n' </proc/cmdline | sed -n -e 's/^rd\.//' -e 's/^modules[-_]load=//p' | tr ',' '\n'; } 2>/dev/null |
    modules_load_names
}

# modules-load.d(5) lines as systemd-modules-load reads them: whole-line # and ; comments only; a
# line with a space inside ("overlay # for containerd") names no module, so it loads nothing.
modules_load_names() {
  sed -e 's/\r$//' -e 's/^[[:space:]]*//' -e 's/[[:space:]]*$//' | grep -v -e '^[#;]' -e '^$' -e '[[:space:]]' | sed 's/-/_/g' | sort -u
}

# Lines of modules-load.d files that name no module (systemd-modules-load fails on them), "file: line".
boot_module_bad_lines() {
  local f
  for f in $(conf_files "${MODULES_BOOT_DIRS[@]}"); do
    [ -f "$f" ] && sed -e 's/\r$//' -e 's/^[[:space:]]*//' -e 's/[[:space:]]*$//' "$f" | grep -v -e '^[#;]' -e '^$' | grep '[[:space:]]' | sed "s#^#$f: #"
  done
  return 0
}

# True when MODULE is loaded at boot. Example: boot_module br_netfilter || echo "not at boot"
boot_module() {
  boot_modules | grep -qx -- "${1//-/_}"
}

# True when MODULE is loaded now (or built into the kernel).
module_loaded() {
  [ -d "/sys/module/${1//-/_}" ]
}

# Files under /run/modules-load.d that list MODULE: gone at boot.
run_module_files() {
  local f
  for f in /run/modules-load.d/*.conf; do
    [ -f "$f" ] && modules_load_names <"$f" | grep -qx -- "${1//-/_}" && echo "$f"
  done
  return 0
}

# `require_modules MODULE...`: a now_problem for each module not loaded (/sys/module), a
# boot_problem for each systemd-modules-load will not load at the next boot, naming a file under
# /run or a line with an inline comment that defeats it.
require_modules() {
  local m run bad
  for m in "$@"; do
    module_loaded "$m" || now_problem "$m が読み込まれていません(modprobe $m)"
    boot_module "$m" && continue
    run=$(run_module_files "$m" | paste -sd, -)
    bad=$(boot_module_bad_lines | grep -F -- "$m" | head -1)
    if [ -n "$run" ]; then
      boot_problem "$m は読み込まれません。$run は /run(tmpfs)にあり、再起動で消えます(/etc/modules-load.d/ に置きます)"
    elif [ -n "$bad" ]; then
      boot_problem "$m は読み込まれません。$bad: 行の途中のコメントは書けません(1 行にモジュール名だけ)"
    else
      boot_problem "$m は読み込まれません(/etc/modules-load.d/*.conf に 1 行 1 モジュールで書きます)"
    fi
  done
}

# ---------------------------------------------------------------- systemd units, at the next boot
# Unit search path without the runtime directories (/run/systemd/{system.control,transient,
# generator*,system,system.attached}): what is left when /run is empty. Generated units come back
# from their generators' inputs, which the swap helpers below read themselves (fstab, rc.local, ...).
UNIT_BOOT_DIRS=(/etc/systemd/system.control /etc/systemd/system /etc/systemd/system.attached /usr/local/lib/systemd/system /usr/lib/systemd/system /lib/systemd/system)
# Runtime unit directories: links and masks here are gone at boot.
UNIT_RUNTIME_DIRS=(/run/systemd/system.control /run/systemd/transient /run/systemd/system /run/systemd/system.attached)

# A unit name as systemctl reads it: without a type suffix it is a service ("kubelet").
unit_name() {
  case $1 in
    *.service | *.socket | *.target | *.timer | *.path | *.swap | *.mount | *.automount | *.device | *.slice | *.scope) echo "$1" ;;
    *) echo "$1.service" ;;
  esac
}

# The file UNIT loads from at the next boot (an instance falls back to its template); fails when none.
boot_unit_file() {
  local d name
  set -- "$(unit_name "$1")"
  for name in "$1" $(case $1 in *@?*.*) echo "${1%%@*}@.${1##*.}" ;; esac); do
    for d in "${UNIT_BOOT_DIRS[@]}"; do
      if [ -e "$d/$name" ]; then echo "$d/$name"; return 0; fi
    done
  done
  return 1
}

# True when UNIT is masked at the next boot: its file is a /dev/null link or empty. A runtime mask
# (systemctl mask --runtime: /run/systemd/system/UNIT -> /dev/null) is not.
boot_unit_masked() {
  local f
  set -- "$(unit_name "$1")"
  f=$(boot_unit_file "$1") || return 1
  [ "$(readlink -f "$f")" = /dev/null ] || [ ! -s "$f" ]
}

# UNIT and the other names it is known by at boot (aliases: symlinks between unit names).
boot_unit_names() {
  local f d l real
  set -- "$(unit_name "$1")"
  echo "$1"
  f=$(boot_unit_file "$1") || return 0
  real=$(readlink -f "$f")
  [ "$real" != /dev/null ] && [ "${real##*/}" != "$1" ] && echo "${real##*/}"
  for d in "${UNIT_BOOT_DIRS[@]}"; do
    for l in "$d"/*; do
      [ -L "$l" ] && [ "${l##*/}" != "$1" ] || continue
      case "$(readlink "$l")" in */"$1" | "$1" | */"${real##*/}" | "${real##*/}") echo "${l##*/}" ;; esac
    done
  done | sort -u
}

# Units that pull UNIT in at boot: *.wants/, *.requires/, *.upholds/ links and Wants=/Requires=/
# Upholds=/BindsTo= lines (unit files and drop-ins), persistent directories only. One name a line.
boot_unit_wanted_by() {
  local n d l f
  set -- "$(unit_name "$1")"
  for n in $(boot_unit_names "$1"); do
    for d in "${UNIT_BOOT_DIRS[@]}"; do
      for l in "$d"/*.wants/"$n" "$d"/*.requires/"$n" "$d"/*.upholds/"$n"; do
        [ -e "$l" ] || [ -L "$l" ] || continue
        l=${l%/*}; l=${l##*/}; echo "${l%.*}"
      done
    done
    for f in $(grep -lsE "^[[:space:]]*(Wants|Requires|Upholds|BindsTo)=(.*[[:space:]])?$(printf '%s' "$n" | sed 's/[.[\*^$]/\\&/g')([[:space:]]|$)" \
      $(for d in "${UNIT_BOOT_DIRS[@]}"; do printf '%s ' "$d"/*.* "$d"/*.d/*.conf; done) 2>/dev/null); do
      case $f in */*.d/*.conf) f=${f%/*}; f=${f##*/}; echo "${f%.d}" ;; *) echo "${f##*/}" ;; esac
    done
  done | sort -u
}

# The target the machine boots into (default.target's alias), and the targets every boot reaches.
boot_default_target() {
  local f
  f=$(boot_unit_file default.target) || { echo graphical.target; return; }
  f=$(readlink -f "$f"); echo "${f##*/}"
}
boot_targets() {
  local def
  def=$(boot_default_target)
  printf '%s\n' sysinit.target basic.target local-fs.target swap.target sockets.target timers.target paths.target default.target "$def"
  [ "$def" = graphical.target ] && echo multi-user.target
  return 0
}

# True when UNIT is started at the next boot: not masked, and a boot target (or, up to 4 levels, a
# unit started at boot) pulls it in. A service also counts when its .socket, .timer or .path does.
boot_unit_starts() {
  local unit depth=${2:-4} w
  unit=$(unit_name "$1")
  if [ "${unit##*.}" = service ] && [ "$depth" = 4 ]; then
    for w in "${unit%.service}.socket" "${unit%.service}.timer" "${unit%.service}.path"; do
      boot_unit_file "$w" >/dev/null && boot_unit_starts "$w" 3 && ! boot_unit_masked "$unit" && return 0
    done
  fi
  boot_unit_file "$unit" >/dev/null || return 1
  boot_unit_masked "$unit" && return 1
  boot_targets | grep -qx -- "$unit" && return 0
  [ "$depth" -gt 0 ] || return 1
  for w in $(boot_unit_wanted_by "$unit"); do
    [ "$w" != "$unit" ] && boot_unit_starts "$w" $((depth - 1)) && return 0
  done
  return 1
}

# UNIT at the next boot, one word: starts | masked | disabled | not-found.
boot_unit_state() {
  set -- "$(unit_name "$1")"
  if ! boot_unit_file "$1" >/dev/null; then echo not-found
  elif boot_unit_masked "$1"; then echo masked
  elif boot_unit_starts "$1"; then echo starts
  else echo disabled
  fi
}

# True when UNIT starts at boot (compatibility name; enabled-runtime and runtime links do not count).
unit_enabled() {
  boot_unit_starts "$1"
}

# The values a setting (ExecStart=, ListenStream=, ...) of UNIT has at the next boot: its file, then
# its persistent drop-ins (UNIT.d/*.conf, /run left out) in systemd's order; an empty assignment
# clears what came before (list settings). One value a line.
boot_unit_setting() {
  local unit key=$2 f d drop=()
  unit=$(unit_name "$1")
  f=$(boot_unit_file "$unit") || return 0
  for d in "${UNIT_BOOT_DIRS[@]}"; do drop+=("$d/$unit.d"); done
  { cat "$f"; for d in $(conf_files "${drop[@]}"); do cat "$d"; done; } 2>/dev/null | awk -v k="$key" '
    { sub(/\r$/, "") }
    /^[[:space:]]*[#;]/ { next }
    {
      line = $0; sub(/^[[:space:]]+/, "", line)
      if (index(line, k "=") != 1) next
      v = substr(line, length(k) + 2); sub(/^[[:space:]]+/, "", v); sub(/[[:space:]]+$/, "", v)
      if (v == "") { n = 0; next }
      vals[++n] = v
    }
    END { for (i = 1; i <= n; i++) print vals[i] }'
}

# Runtime-only entries about UNIT (a mask or enable --runtime link under /run/systemd), one path a line.
unit_runtime_links() {
  local d l
  set -- "$(unit_name "$1")"
  for d in "${UNIT_RUNTIME_DIRS[@]}"; do
    for l in "$d/$1" "$d"/*.wants/"$1" "$d"/*.requires/"$1"; do
      [ -e "$l" ] || [ -L "$l" ] && echo "$l"
    done
  done
  return 0
}

# True when UNIT runs now (active, activating: a Restart= waiting to start it again, reloading).
unit_active_now() {
  case "$(systemctl is-active -- "$(unit_name "$1")" 2>/dev/null)" in
    active | activating | reloading | deactivating) return 0 ;;
    *) return 1 ;;
  esac
}

# Local addresses listening on TCP PORT now (/proc/net/tcp and tcp6, state 0A), one a line.
tcp_listening() {
  local want f _sl addr _rem st _rest
  printf -v want '%04X' "$1"
  for f in /proc/net/tcp /proc/net/tcp6; do
    [ -r "$f" ] || continue
    { read -r _sl
      while read -r _sl addr _rem st _rest; do
        [ "$st" = 0A ] && [ "${addr##*:}" = "$want" ] && echo "$addr"
      done; } <"$f"
  done
  return 0
}

# ---------------------------------------------------------------- swap
# fstab swap entries (not commented, not noauto), the device or file only, one per line.
boot_swap_fstab() {
  awk '!/^[[:space:]]*#/ && NF >= 3 && $3 == "swap" && ($4 == "" || $4 !~ /(^|,)noauto(,|$)/) { print $1 }' /etc/fstab 2>/dev/null
}

# The .swap unit systemd-fstab-generator makes for an fstab device (UUID=, LABEL=, ... as by-* links).
swap_unit_name() {
  local what=$1
  case $what in
    UUID=*) what=/dev/disk/by-uuid/${what#UUID=} ;;
    LABEL=*) what=/dev/disk/by-label/${what#LABEL=} ;;
    PARTUUID=*) what=/dev/disk/by-partuuid/${what#PARTUUID=} ;;
    PARTLABEL=*) what=/dev/disk/by-partlabel/${what#PARTLABEL=} ;;
  esac
  systemd-escape -p --suffix=swap -- "$what"
}

# How a script file (or unit file) calls swapon: "all" (-a/--all), "device", or nothing (no call,
# or only --show/--summary). Comment lines do not count.
swapon_calls() {
  awk '
    /^[[:space:]]*#/ { next }
    {
      line = $0
      while (match(line, /(^|[^A-Za-z0-9_-])swapon([^A-Za-z0-9_-]|$)/)) {
        rest = substr(line, RSTART + RLENGTH - 1); line = substr(line, RSTART + RLENGTH)
        sub(/^[^[:space:]]/, "", rest); sub(/[;&|)].*/, "", rest)
        if (rest ~ /(^|[[:space:]])(--show|-s|--summary|--help|-h|-V|--version)([[:space:]=]|$)/) continue
        if (rest ~ /(^|[[:space:]])(--all|-[b-zA-Z]*a[a-zA-Z]*)([[:space:]]|$)/) { print "all"; continue }
        if (rest ~ /[^[:space:]"]/) print "device"
      }
    }' "$@" 2>/dev/null | sort -u
}

# Levels of files followed from a unit's Exec*= lines (a script, the script it runs, ...).
EXEC_FOLLOW_DEPTH=4
# Absolute paths named in text on stdin (Exec*= lines, a script's body), one a line.
named_paths() {
  grep -oE '(^|[^A-Za-z0-9_.$/-])/[A-Za-z0-9_.+@/-]+' | sed 's#^[^/]*##' | sort -u
}

# Which of the paths PATH... lead to a call of swapon: the file itself calls it, or a text file it
# names does, up to EXEC_FOLLOW_DEPTH levels (any directory). Lines "PATH<TAB>FILE THAT CALLS".
# Compiled programs (binary files) are not read; /dev, /proc, /sys and /run are not followed.
# A few processes per level, whatever the number of files (checks run under emulation).
swapon_reaching() {
  local level=0 p a b f
  local -A seen=() reach=()
  local frontier=("$@") cand texts all=() edges=()
  while [ "$level" -lt "$EXEC_FOLLOW_DEPTH" ] && [ ${#frontier[@]} -gt 0 ]; do
    cand=()
    for p in "${frontier[@]}"; do
      [ -z "${seen[$p]:-}" ] || continue
      seen[$p]=1
      case $p in /dev/* | /proc/* | /sys/* | /run/*) continue ;; esac
      [ -f "$p" ] && cand+=("$p")
    done
    frontier=()
    [ ${#cand[@]} -gt 0 ] || break
    mapfile -t texts < <(grep -Il '' "${cand[@]}" 2>/dev/null)
    [ ${#texts[@]} -gt 0 ] || break
    all+=("${texts[@]}")
    while IFS=$'\t' read -r a b; do
      edges+=("$a"$'\t'"$b"); frontier+=("$b")
    done < <(awk -v re='(^|[^A-Za-z0-9_.$/-])/[A-Za-z0-9_.+@/-]+' '
      /^[[:space:]]*#/ { next }
      { line = $0
        while (match(line, re)) { m = substr(line, RSTART, RLENGTH); sub(/^[^\/]/, "", m); print FILENAME "\t" m; line = substr(line, RSTART + RLENGTH) } }' "${texts[@]}" 2>/dev/null | sort -u)
    level=$((level + 1))
  done
  [ ${#all[@]} -gt 0 ] || return 0
  for f in $(grep -lsw swapon "${all[@]}"); do
    [ -n "$(swapon_calls "$f")" ] && reach[$f]=$f
  done
  for ((level = 0; level < EXEC_FOLLOW_DEPTH; level++)); do
    for p in "${edges[@]}"; do
      a=${p%%$'\t'*}; b=${p#*$'\t'}
      [ -n "${reach[$b]:-}" ] && [ -z "${reach[$a]:-}" ] && reach[$a]=${reach[$b]}
    done
  done
  for p in "$@"; do
    [ -n "${reach[$p]:-}" ] && printf '%s\t%s\n' "$p" "${reach[$p]}"
  done
  return 0
}

# The programs and files a unit's Exec*= lines name (the file and its persistent drop-ins), one a line.
unit_exec_paths() {
  local f=$1 name=${1##*/} d
  { cat "$f"; for d in "${UNIT_BOOT_DIRS[@]}"; do cat "$d/$name.d"/*.conf; done; } 2>/dev/null |
    sed -n 's/^[[:space:]]*Exec[A-Za-z]*=[-@:+!|]*//p' | named_paths
}

# How PATH... call swapon, followed (swapon_reaching): swapon_calls of the files that do.
swapon_calls_followed() {
  local _p file
  while IFS=$'\t' read -r _p file; do swapon_calls "$file"; done < <(swapon_reaching "$@")
}

# Every swap the machine turns on at its next boot, "WHAT<TAB>HOW" a line (nothing: no swap at boot).
boot_swap() {
  local what unit f d name calls script target line
  local fstab_entries
  fstab_entries=$(boot_swap_fstab)
  # 1. /etc/fstab: each line's generated unit, pulled in by swap.target (or anything else).
  for what in $fstab_entries; do
    unit=$(swap_unit_name "$what")
    boot_unit_masked "$unit" && continue
    if ! boot_unit_masked swap.target; then
      printf '%s\t/etc/fstab\n' "$what"
    else # the generated unit (in /run, remade at boot) may still be pulled in by another unit
      for d in $(boot_unit_wanted_by "$unit"); do
        [ "$d" != swap.target ] && boot_unit_starts "$d" && { printf '%s\t/etc/fstab (%s)\n' "$what" "$d"; break; }
      done
    fi
  done
  # 2. .swap unit files.
  for d in "${UNIT_BOOT_DIRS[@]}"; do
    for f in "$d"/*.swap; do
      [ -e "$f" ] || continue
      name=${f##*/}
      [ "$(boot_unit_file "$name")" = "$f" ] || continue # a higher directory has the name
      boot_unit_starts "$name" || continue
      what=$(sed -n 's/^[[:space:]]*What=[[:space:]]*//p' "$f" | tail -1)
      printf '%s\t%s\n' "${what:-$name}" "$f"
    done
  done
  # 3. Other ways: a call of swapon that runs at boot. `swapon -a` turns on fstab's entries even
  #    when swap.target is masked; with no entry left it does nothing.
  report_swapon() { # SOURCE CALLS
    case $2 in *device*) printf '%s\t%s\n' "swapon" "$1" ;; *all*) [ -n "$fstab_entries" ] && printf '%s\t%s\n' "swapon -a" "$1" ;; esac
    return 0
  }
  # Every unit whose file or drop-ins call swapon, or whose Exec*= lines name a file that leads to
  # a call (any path, EXEC_FOLLOW_DEPTH levels): one pass over all the files they name.
  local files=() candidates p
  local -A leads=()
  for d in "${UNIT_BOOT_DIRS[@]}"; do files+=("$d"/*.service "$d"/*.timer "$d"/*.socket "$d"/*.d/*.conf); done
  while IFS=$'\t' read -r p script; do leads[$p]=$script; done < <(
    swapon_reaching $(grep -hsE '^[[:space:]]*Exec[A-Za-z]*=' "${files[@]}" | sed 's/^[^=]*=[-@:+!|]*//' | named_paths))
  candidates=$( {
    grep -lsw swapon "${files[@]}"
    for p in "${!leads[@]}"; do grep -lsF -- "$p" "${files[@]}"; done
  } | sed -e 's#\.d/[^/]*\.conf$##' -e 's#.*/##' | sort -u)
  for name in $candidates; do
    f=$(boot_unit_file "$name") || continue
    calls=$( { swapon_calls "$f"; for d in "${UNIT_BOOT_DIRS[@]}"; do swapon_calls "$d/$name.d"/*.conf; done; } | sort -u)
    script=""
    for p in $(unit_exec_paths "$f"); do
      [ -n "${leads[$p]:-}" ] || continue
      calls="$calls $(swapon_calls "${leads[$p]}")"; script=${script:-${leads[$p]}}
    done
    [ -n "${calls//[[:space:]]/}" ] || continue
    boot_unit_starts "$name" && report_swapon "$name ($f${script:+ -> $script})" "$calls"
  done
  if [ -x /etc/rc.local ] && [ -x /lib/systemd/system-generators/systemd-rc-local-generator ]; then
    report_swapon "/etc/rc.local" "$(swapon_calls_followed /etc/rc.local)"
  fi
  for f in /etc/crontab /etc/cron.d/* /var/spool/cron/crontabs/*; do
    [ -f "$f" ] || continue
    while IFS= read -r line; do
      calls=$(printf '%s\n' "$line" | swapon_calls /dev/stdin)
      calls="$calls $(swapon_calls_followed $(printf '%s\n' "$line" | named_paths))"
      report_swapon "cron @reboot ($f)" "$calls"
    done < <(grep -E '^[[:space:]]*@reboot' "$f" 2>/dev/null)
  done
  for f in /etc/rc[S2345].d/S*; do
    [ -f "$f" ] || continue
    target=$(readlink -f "$f"); name=${target##*/}
    boot_unit_file "$name.service" >/dev/null && continue # a native unit replaces the SysV script
    report_swapon "SysV $f" "$(swapon_calls_followed "$target")"
  done
  if [ -e /usr/lib/systemd/system-generators/zram-generator ] || [ -e /lib/systemd/system-generators/zram-generator ]; then
    for f in /etc/systemd/zram-generator.conf /etc/systemd/zram-generator.conf.d/*.conf /usr/lib/systemd/zram-generator.conf /usr/local/lib/systemd/zram-generator.conf; do
      [ -s "$f" ] && grep -qE '^[[:space:]]*\[zram[0-9]+\]' "$f" && ! boot_unit_masked swap.target && printf '%s\t%s\n' "zram" "$f"
    done
  fi
  unset -f report_swapon
}

# Swap in use now, one device or file per line, as the kernel lists it (/proc/swaps).
swap_now() {
  local name _rest
  { read -r _rest
    while read -r name _rest; do [ -n "$name" ] && printf '%s\n' "$name"; done; } </proc/swaps
}

# Swap the kernel counts now, in kB (/proc/meminfo SwapTotal): a second account of swap_now's.
swap_total_kb() {
  local key value _unit
  while read -r key value _unit; do
    [ "$key" = SwapTotal: ] && { echo "$value"; return 0; }
  done </proc/meminfo
  echo 0
}

# ---------------------------------------------------------------- answer files
# FILE's lines as a person meant them: CRLF and a BOM dropped, full-width ASCII (a Japanese IME's
# ＡＢＣ１２３＝), the ideographic space and long-vowel/minus signs folded to ASCII, # comments and
# blank lines dropped, spaces squeezed and trimmed, lower case.
answer_lines() {
  sed -e 's/\r$//' -e '1s/^\xEF\xBB\xBF//' "$1" 2>/dev/null |
    sed -e 'y/！＂＃＄％＆（）＊＋，－．／０１２３４５６７８９：；＜＝＞？＠ＡＢＣＤＥＦＧＨＩＪＫＬＭＮＯＰＱＲＳＴＵＶＷＸＹＺ［＼］＾＿｀ａｂｃｄｅｆｇｈｉｊｋｌｍｎｏｐｑｒｓｔｕｖｗｘｙｚ｛｜｝～　ー−‐―/!"#$%&()*+,-.\/0123456789:;<=>?@ABCDEFGHIJKLMNOPQRSTUVWXYZ[\\]^_`abcdefghijklmnopqrstuvwxyz{|}~ ----/' |
    sed -e 's/#.*//' -e 's/[[:space:]]\+/ /g' -e 's/^ //' -e 's/ $//' | tr '[:upper:]' '[:lower:]' | grep -v '^$'
}

# ---------------------------------------------------------------- feedback
# A check collects what is still wrong in `problems` (one line each, for the learner) and ends with
# `finish "all good message"`: exit 1 printing the problems, or exit 0 with it. now_problem and
# boot_problem say which half fails: the live system now, or what the next boot will do.
problems=()
now_problem() { problems+=("今: $*"); }
boot_problem() { problems+=("再起動後: $*"); }
finish() {
  if [ ${#problems[@]} -gt 0 ]; then printf '%s\n' "${problems[@]}"; exit 1; fi
  echo "$1"
}
