/**
 * Machine SSH private keys at rest: `Machine.privateKey` holds `v1:` + base64url(iv | tag |
 * AES-256-GCM ciphertext), with a key derived (HKDF-SHA256) from the platform secret, so a
 * database dump or backup alone does not give root on every machine. Rows written before this
 * (plain OpenSSH PEM text) are still read, and sealed on first read and at start-up
 * (sealPlaintextMachineKeys). Only machineEndpoint opens a key, right where SSH needs it.
 */
import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from "node:crypto";
import type { Db } from "../db/client";

/** Prefix of a sealed key; a new format gets a new version and this module reads both. */
const V1 = "v1:";
/** HKDF "info": the derived key serves this one purpose (better-auth's key uses another label). */
const KEY_INFO = "labdeck/machine-private-keys/v1";
/** AES-GCM nonce, in bytes (the size GCM is specified for). */
const IV_BYTES = 12;
/** AES-GCM authentication tag, in bytes. */
const TAG_BYTES = 16;

/**
 * Where the derived key lives: on globalThis, because Next.js route handlers run in their own
 * module graph (as with server/compose/services.ts), and they start sessions too.
 */
const KEY = Symbol.for("labdeck.machineKeys");
const holder = globalThis as Record<symbol, Buffer | undefined>;

/** Derives the machine-key encryption key from the platform secret; call once at start-up. */
export function configureMachineKeys(platformSecret: Buffer): void {
  holder[KEY] = Buffer.from(hkdfSync("sha256", platformSecret, Buffer.alloc(0), KEY_INFO, 32));
}

function keyOrThrow(): Buffer {
  const key = holder[KEY];
  if (!key) throw new Error("machine keys: configureMachineKeys(platformSecret) was not called at start-up");
  return key;
}

export function isSealed(stored: string): boolean {
  return stored.startsWith(V1);
}

/** Encrypts a private key for the database. */
export function sealPrivateKey(plain: string): string {
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv("aes-256-gcm", keyOrThrow(), iv);
  const body = Buffer.concat([cipher.update(plain, "utf8"), cipher.final()]);
  return V1 + Buffer.concat([iv, cipher.getAuthTag(), body]).toString("base64url");
}

/** The private key from a stored value, sealed or (a row from before encryption) plain; throws if tampered with or sealed under another secret. */
export function openPrivateKey(stored: string): string {
  if (!isSealed(stored)) return stored;
  const raw = Buffer.from(stored.slice(V1.length), "base64url");
  const decipher = createDecipheriv("aes-256-gcm", keyOrThrow(), raw.subarray(0, IV_BYTES));
  decipher.setAuthTag(raw.subarray(IV_BYTES, IV_BYTES + TAG_BYTES));
  try {
    return Buffer.concat([decipher.update(raw.subarray(IV_BYTES + TAG_BYTES)), decipher.final()]).toString("utf8");
  } catch {
    throw new Error(
      "machine private key cannot be decrypted: the platform secret (LABDECK_SECRET / secret.key) changed since it was stored",
    );
  }
}

/** Seals one plain row in place; conditional, so a concurrent sealing of the same row is harmless. */
export async function sealIfPlain(db: Db, id: string, stored: string): Promise<void> {
  if (isSealed(stored)) return;
  await db.machine.updateMany({ where: { id, privateKey: stored }, data: { privateKey: sealPrivateKey(stored) } });
}

/** Start-up migration step: seals every row still holding a plain key. Returns how many. */
export async function sealPlaintextMachineKeys(db: Db): Promise<number> {
  const plain = await db.machine.findMany({ where: { NOT: { privateKey: { startsWith: V1 } } }, select: { id: true, privateKey: true } });
  for (const row of plain) await sealIfPlain(db, row.id, row.privateKey);
  return plain.length;
}
