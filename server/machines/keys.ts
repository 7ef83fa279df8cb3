/**
 * SSH keys of a machine set (provider.ts): one ed25519 client key the platform logs in with, and one host key per
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

/**
 * ssh2 1.17's generator writes an ed25519 public key that ends in a zero byte as 31 bytes instead
 * of 32 (about one pair in 256, measured: 10 of 2,000); ssh2's own parser and OpenSSH refuse such a
 * key ("Malformed OpenSSH private key"), so a session got a machine nobody could log in to. Such a
 * pair is made again; 16 tries fail together with a chance of 256^-16.
 */
const MAX_ATTEMPTS = 16;

export function generateEd25519(comment: string): KeyPair {
  for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
    const pair = ssh2.utils.generateKeyPairSync("ed25519", { comment });
    if (ssh2.utils.parseKey(pair.private) instanceof Error) continue;
    return { privateKey: pair.private, publicKey: pair.public.trim().split(/\s+/).slice(0, 2).join(" ") };
  }
  throw new Error(`ssh2 made ${MAX_ATTEMPTS} unusable ed25519 keys in a row`);
}
