/**
 * Files the image builder writes into the lab image: how the guest boots fast under TCG, gets
 * eth0 by DHCP from QEMU's user-mode NAT, and applies its per-VM seed (seed.ts) before sshd.
 */
import { HOLDER_PATH } from "../../holder/client";
import { holderSource, HOLDER_UNIT } from "../../holder/install";
import { SEED_FORMAT_VERSION, SEED_FW_CFG_NAME } from "./seed";

/** Where the guest finds its seed (the qemu_fw_cfg module exposes fw_cfg items here). */
const GUEST_SEED_PATH = `/sys/firmware/qemu_fw_cfg/by_name/${SEED_FW_CFG_NAME}/raw`;
/** Directory of per-user authorized_keys files the platform manages; sshd reads both it and ~/.ssh. */
export const GUEST_PLATFORM_KEYS_DIR = "/etc/ssh/labdeck/authorized_keys";
/** The seed script's own state (which identity it applied). */
const GUEST_STATE_DIR = "/var/lib/labdeck";

/** QEMU user-mode networking's built-in DNS forwarder (slirp: 10.0.2.3). */
const SLIRP_DNS = "10.0.2.3";

/**
 * Modules the small initrd holds (initramfs MODULES=list): the root disk and its filesystem.
 * Everything else (virtio_net, br_netfilter, ...) loads from the root filesystem after boot.
 */
export const INITRD_MODULES = ["virtio_pci", "virtio_blk", "ext4"] as const;

/**
 * The seed script: POSIX sh (dash). Parses the seed with built-ins and never sources it. Every
 * process costs ~0.2 s in a booting TCG guest, so it runs only cat and base64 (a version with
 * sed/ssh-keygen/mv per field took 7 s).
 */
const SEED_SCRIPT = `#!/bin/sh
# Installed by Labdeck (server/machines/images/guest.ts). Applies this VM's settings, handed over by
# QEMU through fw_cfg, before networkd and sshd start.
#  - every boot: the SSH host key and the platform's authorized key (so the platform keeps access)
#  - when the seed's identity changed (first boot): hostname, /etc/hosts, eth1 address; later
#    changes a learner makes to these survive reboots
set -eu
SEED=${GUEST_SEED_PATH}
STATE=${GUEST_STATE_DIR}
[ -r "$SEED" ] || modprobe qemu_fw_cfg 2>/dev/null || true
if [ ! -r "$SEED" ]; then
  echo "labdeck-seed: no seed at $SEED; keeping the settings of the last boot"
  [ -s /etc/ssh/ssh_host_ed25519_key ] || ssh-keygen -q -t ed25519 -N '' -f /etc/ssh/ssh_host_ed25519_key
  exit 0
fi
umask 077
# One read of the fw_cfg file (the shell's read builtin would fetch it byte by byte).
cat "$SEED" > "$STATE/seed"
version= hostname= eth1= hosts= hostkey= hostpub= authkeys=
while read -r line; do
  value=\${line#*=}
  case "\${line%%=*}" in
    LABDECK_SEED) version=$value ;;
    HOSTNAME) hostname=$value ;;
    ETH1_ADDRESS) eth1=$value ;;
    HOSTS_B64) hosts=$value ;;
    HOST_KEY_B64) hostkey=$value ;;
    HOST_KEY_PUB) hostpub=$value ;;
    AUTHORIZED_KEYS_B64) authkeys=$value ;;
  esac
done < "$STATE/seed"
rm -f "$STATE/seed"
if [ "$version" != "${SEED_FORMAT_VERSION}" ]; then
  echo "labdeck-seed: seed format '$version' is not ${SEED_FORMAT_VERSION}" >&2
  exit 1
fi

printf '%s' "$hostkey" | base64 -d > /etc/ssh/ssh_host_ed25519_key
umask 022
printf '%s\\n' "$hostpub" > /etc/ssh/ssh_host_ed25519_key.pub
printf '%s' "$authkeys" | base64 -d > ${GUEST_PLATFORM_KEYS_DIR}/root

identity="$hostname $eth1 $hosts"
applied=
[ ! -r "$STATE/identity" ] || read -r applied < "$STATE/identity"
if [ "$applied" != "$identity" ]; then
  printf '%s\\n' "$hostname" > /etc/hostname
  printf '%s' "$hosts" | base64 -d > /etc/hosts
  printf '%s\\n' "# Written by labdeck-seed at first boot: the session's private L2 network." \\
    "[Match]" "Name=eth1" "" "[Network]" "Address=$eth1" "LinkLocalAddressing=no" "IPv6AcceptRA=no" \\
    > /etc/systemd/network/20-eth1.network
  printf '%s\\n' "$identity" > "$STATE/identity"
  echo "labdeck-seed: applied identity $hostname $eth1"
fi
# systemd set the hostname from /etc/hostname before this ran; a learner's own name survives.
read -r name < /etc/hostname
printf '%s' "$name" > /proc/sys/kernel/hostname
`;

const SEED_UNIT = `# Installed by Labdeck (server/machines/images/guest.ts).
[Unit]
Description=Labdeck: apply this VM's settings from QEMU fw_cfg
DefaultDependencies=no
After=local-fs.target systemd-modules-load.service
Before=sysinit.target ssh.service systemd-networkd.service network-pre.target shutdown.target
Wants=network-pre.target
Conflicts=shutdown.target

[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart=/usr/local/sbin/labdeck-seed

[Install]
WantedBy=sysinit.target
`;

/**
 * The terminal holder (server/holder/labdeck-holder) as a system service: it owns the
 * lab's shells in its own cgroup, so neither `systemctl restart ssh`, nor the end of an SSH login,
 * nor the Labdeck server's death ends them. Stopping the service ends them (KillMode default):
 * an interactive bash ignores SIGTERM, so they also get SIGHUP (what a closed terminal sends), and
 * a shell that still does not exit is killed after 10 s, not systemd's 90 s, so a reboot with the
 * lab's terminals open is not held up in shutdown.
 */
const HOLDER_SERVICE = `# Installed by Labdeck (server/machines/images/guest.ts).
[Unit]
Description=Labdeck terminal holder: the lab's shells, independent of SSH
After=local-fs.target

[Service]
ExecStart=/usr/bin/python3 ${HOLDER_PATH}
Restart=on-failure
RestartSec=1
SendSIGHUP=yes
TimeoutStopSec=10s

[Install]
WantedBy=multi-user.target
`;

/**
 * Says on the serial console (the host's serial.log) that sshd is up on this boot, with the boot
 * id: the host waits for this line before its first SSH connection (vm.ts waitForSsh). Connections
 * made while the guest boots are held by QEMU's slirp and all reach sshd at once when it starts,
 * past its MaxStartups (measured: sshd dropped connections for 26 s, a boot took 98 s, not 65 s).
 * ssh.service is Type=notify on Debian: after it, sshd listens.
 */
export const READY_LINE_PREFIX = "labdeck-ready ";
const READY_UNIT = `# Installed by Labdeck (server/machines/images/guest.ts).
[Unit]
Description=Labdeck: tell the host on the serial console that SSH is up on this boot
After=ssh.service systemd-networkd.service
Wants=ssh.service

[Service]
Type=oneshot
ExecStart=/bin/sh -c 'echo "${READY_LINE_PREFIX}$(cat /proc/sys/kernel/random/boot_id)" > /dev/ttyS0'

[Install]
WantedBy=multi-user.target
`;

/** initramfs-tools setting for a small initrd (boots ~1.5 s faster than MODULES=most, and builds in seconds). */
export const INITRAMFS_CONF = {
  path: "/etc/initramfs-tools/conf.d/labdeck.conf",
  content: "# Installed by Labdeck: a small initrd boots faster.\nMODULES=list\n",
};

/** Files written into the root filesystem, by path; mode 0644 unless given. */
export function guestFiles(): { path: string; content: string; mode?: number }[] {
  return [
    { path: "/usr/local/sbin/labdeck-seed", content: SEED_SCRIPT, mode: 0o755 },
    { path: "/etc/systemd/system/labdeck-seed.service", content: SEED_UNIT },
    { path: HOLDER_PATH, content: holderSource().toString("utf8"), mode: 0o755 },
    { path: `/etc/systemd/system/${HOLDER_UNIT}.service`, content: HOLDER_SERVICE },
    { path: "/etc/systemd/system/labdeck-ready.service", content: READY_UNIT },
    {
      path: "/etc/systemd/network/10-eth0.network",
      content: [
        "# Installed by Labdeck: QEMU user-mode NAT; every VM gets 10.0.2.15.",
        "[Match]",
        "Name=eth0",
        "",
        "[Network]",
        "DHCP=ipv4",
        "LinkLocalAddressing=no",
        "IPv6AcceptRA=no",
        "",
        "[DHCPv4]",
        "UseDNS=no",
        "",
      ].join("\n"),
    },
    // No systemd-resolved in the image: a static resolver, the one slirp provides.
    { path: "/etc/resolv.conf", content: `nameserver ${SLIRP_DNS}\n` },
    {
      path: "/etc/fstab",
      content: "# <file system> <mount point> <type> <options> <dump> <pass>\n/dev/vda / ext4 defaults,errors=remount-ro 0 1\n",
    },
    { path: "/etc/default/locale", content: "LANG=C.UTF-8\n" },
    { path: "/etc/hostname", content: "labdeck\n" },
    { path: "/etc/hosts", content: "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n" },
    { path: "/etc/motd", content: "" },
    {
      path: "/etc/ssh/sshd_config.d/labdeck.conf",
      content: [
        "# Installed by Labdeck (server/machines/images/guest.ts). First value wins: this file is",
        "# included at the top of sshd_config.",
        "PermitRootLogin prohibit-password",
        "PasswordAuthentication no",
        "KbdInteractiveAuthentication no",
        "HostKey /etc/ssh/ssh_host_ed25519_key",
        // The platform's key lives outside ~/.ssh so that nothing a learner does to
        // authorized_keys (labs hand keys around for ansible) locks the platform out.
        `AuthorizedKeysFile .ssh/authorized_keys ${GUEST_PLATFORM_KEYS_DIR}/%u`,
        "UseDNS no",
        // The platform opens many connections (terminals, the grader, setup, resets); under TCG
        // a handshake takes seconds. Debian's 10 unauthenticated connections and 120 s grace let
        // abandoned ones lock sshd out for minutes ("Exceeded MaxStartups", measured).
        "MaxStartups 100:30:300",
        "LoginGraceTime 30",
        "",
      ].join("\n"),
    },
    // Loaded by systemd-modules-load early, so the seed service finds its file without a modprobe.
    { path: "/etc/modules-load.d/labdeck.conf", content: "# Installed by Labdeck: the seed comes through fw_cfg.\nqemu_fw_cfg\n" },
    INITRAMFS_CONF,
    {
      path: "/etc/initramfs-tools/modules",
      content: `# Installed by Labdeck: what finds and mounts /dev/vda.\n${INITRD_MODULES.join("\n")}\n`,
    },
  ];
}

/** Directories the image needs that no package creates; the journal one makes the journal persistent (`journalctl -b -1` after a reboot is part of the labs). */
export const GUEST_DIRECTORIES = [GUEST_PLATFORM_KEYS_DIR, GUEST_STATE_DIR, "/var/log/journal"];

/**
 * Units masked in the image: boot work a lab VM never needs (each costs ~0.5-1.5 s of the one TCG
 * vCPU). Masking more (modprobe@dm_mod/loop/fuse, debugfs/tracefs mounts, network-generator) made
 * no measurable difference to a boot's ~29 CPU-seconds, so the image stays close to stock Debian.
 */
export const MASKED_UNITS = [
  "systemd-binfmt.service",
  "proc-sys-fs-binfmt_misc.automount",
  "modprobe@drm.service",
  "modprobe@efi_pstore.service",
];

/** Units disabled in the image: timers that would wake up in every VM and compete for the CPU. */
export const DISABLED_UNITS = ["apt-daily.timer", "apt-daily-upgrade.timer", "e2scrub_all.timer", "fstrim.timer", "e2scrub_reap.service"];
/** Units enabled in the image. */
export const ENABLED_UNITS = [
  "systemd-networkd.service",
  "labdeck-seed.service",
  "ssh.service",
  `${HOLDER_UNIT}.service`,
  "labdeck-ready.service",
];
