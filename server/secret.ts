import { randomBytes } from "node:crypto";
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
