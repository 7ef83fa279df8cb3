/**
 * The per-VM seed: settings QEMU hands to the guest through fw_cfg, read at boot by the image's
 * labdeck-seed.service (guest.ts) before networkd and sshd start. A small `KEY=value` file the
 * guest parses with shell built-ins (never sources), multi-line values in base64, one per line.
 */
import { z } from "zod";

/** fw_cfg item name; the guest reads /sys/firmware/qemu_fw_cfg/by_name/<name>/raw. */
export const SEED_FW_CFG_NAME = "opt/labdeck/seed";
/** Bumped when the format changes; the guest script refuses other versions. */
export const SEED_FORMAT_VERSION = 1;

export const MachineSeed = z.strictObject({
  hostname: z.string().regex(/^[a-z]([a-z0-9-]{0,61}[a-z0-9])?$/, "must be a lowercase hostname"),
  /** eth1 address with prefix, e.g. 192.168.56.10/24. */
  eth1Address: z.string().regex(/^(\d{1,3}\.){3}\d{1,3}\/\d{1,2}$/, "must be an IPv4 address with prefix"),
  /** Full /etc/hosts content (all machines of the set by their eth1 addresses). */
  hosts: z.string(),
  /** OpenSSH private host key the VM's sshd presents. */
  hostPrivateKey: z.string().includes("PRIVATE KEY"),
  /** Its public half, one line ("ssh-ed25519 AAAA..."); saves the guest an ssh-keygen run. */
  hostPublicKey: z.string().regex(/^ssh-ed25519 [A-Za-z0-9+/]+=*$/, "must be an OpenSSH ed25519 public key line"),
  /** authorized_keys lines for root: the platform's client key for the set. */
  authorizedKeys: z.string().min(1),
});
export type MachineSeed = z.infer<typeof MachineSeed>;

const b64 = (text: string) => Buffer.from(text, "utf8").toString("base64");

/** The seed file's text. */
export function seedFile(seed: MachineSeed): string {
  const s = MachineSeed.parse(seed);
  return [
    `LABDECK_SEED=${SEED_FORMAT_VERSION}`,
    `HOSTNAME=${s.hostname}`,
    `ETH1_ADDRESS=${s.eth1Address}`,
    `HOSTS_B64=${b64(s.hosts)}`,
    `HOST_KEY_B64=${b64(s.hostPrivateKey)}`,
    `HOST_KEY_PUB=${s.hostPublicKey}`,
    `AUTHORIZED_KEYS_B64=${b64(s.authorizedKeys)}`,
    "",
  ].join("\n");
}

/** /etc/hosts for a machine set: loopback lines plus every machine by its eth1 address. */
export function hostsFile(machines: readonly { name: string; eth1Address: string }[]): string {
  return [
    "127.0.0.1\tlocalhost",
    "::1\tlocalhost ip6-localhost ip6-loopback",
    "ff02::1\tip6-allnodes",
    "ff02::2\tip6-allrouters",
    "",
    "# Lab machines (eth1), written by Labdeck at first boot",
    ...machines.map((m) => `${m.eth1Address.split("/")[0]}\t${m.name}`),
    "",
  ].join("\n");
}

/** The host key pair a seed file hands its VM (a machine restored again keeps its own key). */
export function seedHostKey(seed: string): { privateKey: string; publicKey: string } {
  const value = (key: string) => new RegExp(`^${key}=(.*)$`, "m").exec(seed)?.[1];
  const priv = value("HOST_KEY_B64");
  const pub = value("HOST_KEY_PUB");
  if (!priv || !pub) throw new Error("the seed has no host key");
  return { privateKey: Buffer.from(priv, "base64").toString("utf8"), publicKey: pub };
}
