/**
 * SSH keys of a session: one ed25519 client key the platform logs in with, and one host key per
 * VM whose public half is pinned before the VM first boots. Generated in-process (ssh2's
 * OpenSSH-format generator), never by the guest, so nothing has to be trusted on first use.
 */
import ssh2 from "ssh2";

export interface KeyPair {
  /** OpenSSH private key text ("-----BEGIN OPENSSH PRIVATE KEY-----"). */
  privateKey: string;
  /** OpenSSH one-line public key without comment: "ssh-ed25519 AAAA...". */
  publicKey: string;
}

export function generateEd25519(comment: string): KeyPair {
  const pair = ssh2.utils.generateKeyPairSync("ed25519", { comment });
  return { privateKey: pair.private, publicKey: pair.public.trim().split(/\s+/).slice(0, 2).join(" ") };
}
