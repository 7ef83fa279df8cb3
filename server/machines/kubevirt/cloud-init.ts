/**
 * A fleet VM's identity as cloud-init NoCloud data: the same settings the QEMU guest gets through
 * fw_cfg (qemu/seed.ts), in cloud-init's own formats, so any image with cloud-init boots as a lab
 * machine. KubeVirt hands both documents to the guest from a Secret (manifests.ts), never from the
 * VM object, so the host key is not readable by whoever may read VMs.
 *
 * - user data (#cloud-config): hostname, /etc/hosts, the SSH host key Labdeck generated and pins
 *   (ssh_keys, every other type removed), the platform's public key outside ~/.ssh (the image's
 *   sshd reads /etc/ssh/labdeck/authorized_keys/%u, qemu/guest.ts), optional DNS for internet labs.
 * - network data (version 2): eth0 by DHCP from KubeVirt's masquerade, eth1 the set network at
 *   a fixed address, matched by the MAC the VM spec gives it.
 *
 * cloud-init applies them once per instance id (the VM's first boot, and again after a reset's
 * fresh disk); what a learner changes later survives reboots, as with the QEMU seed.
 */
import { stringify } from "yaml";
import { z } from "zod";
import { GUEST_PLATFORM_KEYS_DIR } from "../images/guest";
import { hostsFile } from "../images/seed";

export const CloudInitIdentity = z.strictObject({
  hostname: z.string().regex(/^[a-z]([a-z0-9-]{0,61}[a-z0-9])?$/, "must be a lowercase hostname"),
  /** eth1 address with prefix, e.g. 192.168.56.10/24. */
  eth1Address: z.string().regex(/^(\d{1,3}\.){3}\d{1,3}\/\d{1,2}$/, "must be an IPv4 address with prefix"),
  /** eth1's MAC (locally administered), also in the VM spec. */
  eth1Mac: z.string().regex(/^02(:[0-9a-f]{2}){5}$/, "must be a locally administered MAC in lowercase"),
  /** Every machine of the set by its eth1 address, for /etc/hosts. */
  machines: z.array(z.strictObject({ name: z.string(), eth1Address: z.string() })).min(1),
  hostPrivateKey: z.string().includes("PRIVATE KEY"),
  hostPublicKey: z.string().regex(/^ssh-ed25519 [A-Za-z0-9+/]+=*$/, "must be an OpenSSH ed25519 public key line"),
  /** authorized_keys text for root: the platform's key for the set. */
  authorizedKeys: z.string().min(1),
  /** Resolver the guest uses (internet labs), an IPv4 address; none: the image's own resolv.conf. */
  nameserver: z.ipv4().optional(),
});
export type CloudInitIdentity = z.infer<typeof CloudInitIdentity>;

/** The #cloud-config document (the Secret's `userdata`). */
export function userData(identity: CloudInitIdentity): string {
  const id = CloudInitIdentity.parse(identity);
  const files: { path: string; content: string; permissions: string; owner: string }[] = [
    { path: "/etc/hosts", content: hostsFile(id.machines), permissions: "0644", owner: "root:root" },
    { path: `${GUEST_PLATFORM_KEYS_DIR}/root`, content: ensureNewline(id.authorizedKeys), permissions: "0644", owner: "root:root" },
  ];
  if (id.nameserver)
    files.push({ path: "/etc/resolv.conf", content: `nameserver ${id.nameserver}\n`, permissions: "0644", owner: "root:root" });
  const config = {
    hostname: id.hostname,
    preserve_hostname: false,
    // /etc/hosts comes from write_files: the set's machines by their eth1 addresses.
    manage_etc_hosts: false,
    // Only the host key Labdeck pinned: no generated keys of other types a client could be offered.
    ssh_deletekeys: true,
    ssh_genkeytypes: [],
    ssh_keys: { ed25519_private: ensureNewline(id.hostPrivateKey), ed25519_public: id.hostPublicKey },
    // Root is the lab's user (the course logs in as root); no distribution default user.
    disable_root: false,
    users: [],
    ssh_pwauth: false,
    write_files: files,
  };
  return `#cloud-config\n${stringify(config, { lineWidth: 0 })}`;
}

/** The network-config version 2 document (the Secret's `networkdata`). */
export function networkData(identity: Pick<CloudInitIdentity, "eth1Address" | "eth1Mac">): string {
  return stringify(
    {
      version: 2,
      ethernets: {
        // KubeVirt's masquerade binding answers DHCP with the same address on every VM (the
        // second address of the pod network's vmNetworkCIDR, 10.0.2.2).
        eth0: { match: { name: "eth0" }, dhcp4: true, "dhcp4-overrides": { "use-dns": false }, "link-local": [] },
        eth1: { match: { macaddress: identity.eth1Mac }, "set-name": "eth1", addresses: [identity.eth1Address], "link-local": [] },
      },
    },
    { lineWidth: 0 },
  );
}

function ensureNewline(text: string): string {
  return text.endsWith("\n") ? text : `${text}\n`;
}
