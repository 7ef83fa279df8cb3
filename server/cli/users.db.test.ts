/**
 * `labdeck users invite` as a process, against a real embedded PostgreSQL: with the database
 * already running (as while the server runs) and with nothing running (the CLI starts it).
 */
import { spawn } from "node:child_process";
import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { createDb } from "../db/client";
import { startEmbeddedPostgres } from "../db/embedded";
import { migrateDeploy } from "../db/migrate";
import { freePort } from "../testing/stack";
import { findOpenInvitation } from "../auth/invitations";

const dirs: string[] = [];
afterAll(async () => {
  for (const d of dirs) await fs.rm(d, { recursive: true, force: true });
});

async function dataDir(): Promise<string> {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), "labdeck-users-cli-"));
  await fs.chmod(dir, 0o711);
  dirs.push(dir);
  return dir;
}

function labdeck(env: Record<string, string>, ...args: string[]): Promise<{ code: number | null; out: string; err: string }> {
  return new Promise((resolve) => {
    // The embedded database of LABDECK_DATA_DIR, never an external one from this shell.
    const { DATABASE_URL: _external, ...inherited } = process.env;
    const child = spawn(process.execPath, ["--import", "tsx", "server/cli/main.ts", ...args], {
      env: { ...inherited, LOG_LEVEL: "warn", ...env },
    });
    let out = "";
    let err = "";
    child.stdout.on("data", (c: Buffer) => (out += c.toString()));
    child.stderr.on("data", (c: Buffer) => (err += c.toString()));
    child.on("close", (code) => resolve({ code, out, err }));
  });
}

function tokenOf(out: string): string {
  const match = /\/invite\/([A-Za-z0-9_-]{43})$/m.exec(out);
  if (!match) throw new Error(`no invitation link in: ${out}`);
  return match[1]!;
}

describe("labdeck users invite", () => {
  it("makes an invitation link in the running server's embedded database; bad input makes none", async () => {
    const dir = await dataDir();
    const port = await freePort();
    const embedded = await startEmbeddedPostgres(dir, port);
    await migrateDeploy(embedded.url);
    const db = createDb(embedded.url);
    try {
      const env = { LABDECK_DATA_DIR: dir, LABDECK_PG_PORT: String(port), LABDECK_PUBLIC_URL: "https://labs.example.test" };
      const ok = await labdeck(env, "users", "invite", "--email", "New-Admin@Example.test", "--role", "admin");
      expect(ok.code, ok.err).toBe(0);
      expect(ok.out).toMatch(/^https:\/\/labs\.example\.test\/invite\//m);
      // The expiry in the platform zone (Asia/Tokyo unless set), as the UI shows times; not UTC ISO.
      expect(ok.out).toMatch(/valid until \d{4}-\d{2}-\d{2} \d{2}:\d{2} JST:\n/);
      const invitation = await findOpenInvitation(db, tokenOf(ok.out));
      expect(invitation).toMatchObject({ email: "new-admin@example.test", role: "admin" });

      const before = await db.invitation.count();
      for (const args of [
        ["--email", "not-an-email", "--role", "admin"],
        ["--email", "a@example.test", "--role", "root"],
        ["--email", "a@example.test"],
      ]) {
        const bad = await labdeck(env, "users", "invite", ...args);
        expect(bad.code, args.join(" ")).toBe(2);
        expect(bad.err).toContain("usage:");
      }
      expect(await db.invitation.count()).toBe(before);
    } finally {
      await db.$disconnect();
      await embedded.stop();
    }
  }, 240_000);

  it("starts the embedded database itself when the server is not running", async () => {
    const dir = await dataDir();
    const port = await freePort();
    const env = { LABDECK_DATA_DIR: dir, LABDECK_PG_PORT: String(port), HOST: "127.0.0.1", PORT: "3999" };
    const ok = await labdeck(env, "users", "invite", "--email", "first@example.test", "--role", "learner", "--days", "2");
    expect(ok.code, ok.err).toBe(0);
    expect(ok.out).toMatch(/^http:\/\/127\.0\.0\.1:3999\/invite\//m);
    const embedded = await startEmbeddedPostgres(dir, port);
    const db = createDb(embedded.url);
    try {
      const invitation = await findOpenInvitation(db, tokenOf(ok.out));
      expect(invitation?.role).toBe("learner");
      expect(invitation!.expiresAt.getTime() - Date.now()).toBeLessThanOrEqual(2 * 24 * 60 * 60 * 1000);
    } finally {
      await db.$disconnect();
      await embedded.stop();
    }
  }, 240_000);
});
