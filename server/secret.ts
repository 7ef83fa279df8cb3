import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from "node:crypto";
import fs from "node:fs/promises";
import path from "node:path";

/** Bytes of the server secret that signs terminal tokens. */
const SECRET_BYTES = 32;

/**
 * The server's signing secret: LABDECK_SECRET when set (several replicas must share it), else
 * one generated on first start and kept in the data directory (mode 0600).
 */
export async function loadSecret(dataDir: string, fromEnv?: string): Promise<Buffer> {
  if (fromEnv) {
    if (fromEnv.length < 32) throw new Error("LABDECK_SECRET must be at least 32 characters");
    return Buffer.from(fromEnv, "utf8");
  }
  const file = path.join(dataDir, "secret.key");
  try {
    const hex = (await fs.readFile(file, "utf8")).trim();
    if (/^[0-9a-f]{64}$/.test(hex)) return Buffer.from(hex, "hex");
    throw new Error(`${file} is corrupt; delete it to generate a new secret`);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
  }
  const secret = randomBytes(SECRET_BYTES);
  await fs.mkdir(dataDir, { recursive: true });
  await fs.writeFile(file, secret.toString("hex") + "\n", { mode: 0o600, flag: "wx" });
  return secret;
}

/** AES-256-GCM: 12-byte IV (NIST's recommended size), 16-byte authentication tag, 32-byte key. */
const SEAL_IV_BYTES = 12;
const SEAL_TAG_BYTES = 16;
const SEAL_KEY_BYTES = 32;

/**
 * A key for one purpose derived from the platform secret (HKDF-SHA-256, the purpose as `info`),
 * so a value sealed for one purpose cannot be opened as another and the secret itself never
 * encrypts anything.
 */
function sealKey(secret: Buffer, purpose: string): Buffer {
  return Buffer.from(hkdfSync("sha256", secret, Buffer.alloc(0), `labdeck:${purpose}`, SEAL_KEY_BYTES));
}

/** Encrypts `plaintext` for storage: base64url of IV ‖ tag ‖ ciphertext (AES-256-GCM, the purpose as AAD). */
export function sealSecret(secret: Buffer, purpose: string, plaintext: string): string {
  const iv = randomBytes(SEAL_IV_BYTES);
  const cipher = createCipheriv("aes-256-gcm", sealKey(secret, purpose), iv);
  cipher.setAAD(Buffer.from(purpose));
  const body = Buffer.concat([cipher.update(plaintext, "utf8"), cipher.final()]);
  return Buffer.concat([iv, cipher.getAuthTag(), body]).toString("base64url");
}

/** The plaintext of a sealSecret value, or null when it was sealed with another secret or purpose, or is damaged. */
export function openSecret(secret: Buffer, purpose: string, sealed: string): string | null {
  try {
    const raw = Buffer.from(sealed, "base64url");
    if (raw.length < SEAL_IV_BYTES + SEAL_TAG_BYTES) return null;
    const decipher = createDecipheriv("aes-256-gcm", sealKey(secret, purpose), raw.subarray(0, SEAL_IV_BYTES));
    decipher.setAAD(Buffer.from(purpose));
    decipher.setAuthTag(raw.subarray(SEAL_IV_BYTES, SEAL_IV_BYTES + SEAL_TAG_BYTES));
    return Buffer.concat([decipher.update(raw.subarray(SEAL_IV_BYTES + SEAL_TAG_BYTES)), decipher.final()]).toString("utf8");
  } catch {
    return null;
  }
}
