/**
 * Every generated key pair is usable: its private key parses (ssh2, as the gateway and grader read
 * it) and its public key is a 32-byte ed25519 key, over enough pairs that ssh2 1.17's one-in-256
 * short key would show (P(no bad pair among 3,000) ≈ 8e-6 without the retry).
 */
import ssh2 from "ssh2";
import { describe, expect, it } from "vitest";
import { generateEd25519 } from "./keys";

describe("generateEd25519", () => {
  it("makes 3,000 pairs that all parse, with 32-byte public keys", () => {
    const bad: string[] = [];
    for (let i = 0; i < 3_000; i++) {
      const pair = generateEd25519(`test-${i}`);
      const parsed = ssh2.utils.parseKey(pair.privateKey);
      const blob = Buffer.from(pair.publicKey.split(" ")[1]!, "base64");
      // ssh-ed25519 blob: string "ssh-ed25519" (4 + 11) + string key (4 + 32).
      if (parsed instanceof Error || blob.length !== 51) bad.push(pair.publicKey);
    }
    expect(bad).toEqual([]);
  });
});
