/**
 * Machine private keys are encrypted at rest: on the test stack (real PostgreSQL, real
 * sshd hosts in network namespaces, static provider), the stored column of every machine of a
 * started session holds a `v1:` sealed value and never "PRIVATE KEY", while SSH to the machine
 * works; a row from before encryption (plain PEM) still works and is sealed when read and by
 * the start-up step; a value sealed under another secret fails with a message saying so.
 */
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestStack, type TestStack } from "../testing/stack";
import { machineEndpoint } from "../sessions/lab-sessions";
import { configureMachineKeys, openPrivateKey, sealPlaintextMachineKeys, sealPrivateKey } from "./sealed-keys";

let stack: TestStack;

/** Unused by every other test (grep `subnet:` in server/ and e2e/). */
const SUBNET = 110;

beforeAll(async () => {
  stack = await startTestStack({ subnet: SUBNET });
}, 120_000);
afterAll(async () => stack?.stop());

const storedKeys = (sessionId: string) =>
  stack.db.$queryRaw<
    { name: string; privateKey: string }[]
  >`SELECT name, "privateKey" FROM "Machine" WHERE "sessionId" = ${sessionId} ORDER BY name`;

describe("machine private keys at rest", () => {
  it("a started session's rows hold only sealed keys, and SSH with the opened key works", async () => {
    const sessionId = await stack.startSession("keys-learner");
    const rows = await storedKeys(sessionId);
    expect(rows.length).toBeGreaterThan(0);
    for (const row of rows) {
      expect(row.privateKey).toMatch(/^v1:[A-Za-z0-9_-]+$/);
      expect(row.privateKey).not.toContain("PRIVATE KEY");
    }
    const endpoint = await machineEndpoint(stack.db, sessionId, rows[0]!.name);
    expect(endpoint!.privateKey).toContain("OPENSSH PRIVATE KEY");
    const run = await stack.pool.run(endpoint!, "echo reached-$(hostname)", 20);
    expect(run.output).toBe(`reached-${rows[0]!.name}`);
  }, 60_000);

  it("a plaintext row from before encryption still works and is sealed on first read", async () => {
    const sessionId = await stack.startSession("old-row-learner");
    const [row] = await storedKeys(sessionId);
    const plain = openPrivateKey(row!.privateKey);
    await stack.db.machine.updateMany({ where: { sessionId, name: row!.name }, data: { privateKey: plain } });
    expect((await storedKeys(sessionId))[0]!.privateKey).toContain("PRIVATE KEY");
    const endpoint = await machineEndpoint(stack.db, sessionId, row!.name);
    expect((await stack.pool.run(endpoint!, "echo old-row-ok", 20)).output).toBe("old-row-ok");
    const after = (await storedKeys(sessionId))[0]!.privateKey;
    expect(after).toMatch(/^v1:/);
    expect(openPrivateKey(after)).toBe(plain);
  }, 60_000);

  it("the start-up step seals every plaintext row left", async () => {
    const sessionId = await stack.startSession("startup-learner");
    const rows = await storedKeys(sessionId);
    for (const r of rows)
      await stack.db.machine.updateMany({ where: { sessionId, name: r.name }, data: { privateKey: openPrivateKey(r.privateKey) } });
    expect(await sealPlaintextMachineKeys(stack.db)).toBeGreaterThanOrEqual(rows.length);
    const all = await stack.db.$queryRaw<{ privateKey: string }[]>`SELECT "privateKey" FROM "Machine"`;
    for (const r of all) expect(r.privateKey).not.toContain("PRIVATE KEY");
    expect(await sealPlaintextMachineKeys(stack.db)).toBe(0);
  }, 60_000);

  it("each seal is fresh (random IV), a tampered value or another secret is refused with a clear message", () => {
    const a = sealPrivateKey("-----BEGIN OPENSSH PRIVATE KEY-----\nx\n");
    expect(sealPrivateKey("-----BEGIN OPENSSH PRIVATE KEY-----\nx\n")).not.toBe(a);
    const flipped = a.slice(0, -2) + (a.at(-2) === "A" ? "B" : "A") + a.at(-1);
    expect(() => openPrivateKey(flipped)).toThrow(/cannot be decrypted/);
    configureMachineKeys(randomBytes(32));
    try {
      expect(() => openPrivateKey(a)).toThrow(/platform secret .* changed/);
    } finally {
      configureMachineKeys(stack.secret);
    }
    expect(openPrivateKey(a)).toContain("x");
  });
});
