/**
 * Role takeover benchmark on a real embedded PostgreSQL, with the production lease times
 * (ROLE_LEASE_MS, ROLE_RENEW_MS): how long the sweeper role stays without a holder.
 *  - kill -9: a child process holding the role (server/testing/sweeper-child.ts) is killed at a
 *    random point of its renewal cycle; time until this process's SingletonRole starts the work.
 *  - baseline, clean stop: the holder stops (its row is deleted); time until the other starts.
 *
 *   npx tsx bench/role-takeover.ts [--rounds 3]
 */
import { spawn } from "node:child_process";
import pino from "pino";
import { z } from "zod";
import { ROLE_LEASE_MS, ROLE_RENEW_MS, SingletonRole } from "../server/leases/roles";
import { startTestDb } from "../server/testing/test-db";
import { benchFlags } from "./lib/flags";

const SWEEP_MS = 30_000; // the child's sweep interval, ms (production's; nothing is swept here)
const log = pino({ level: "silent" });
const Flags = z.object({ rounds: z.coerce.number().int().min(1).max(20).default(3) });
const flags = benchFlags(Flags, "usage: npx tsx bench/role-takeover.ts [--rounds N]");

const { db, url, stop } = await startTestDb();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Starts the work of a SingletonRole; resolves with the time it started. */
function contender(holder: string) {
  let startedAt = 0;
  const role = new SingletonRole({ db, log }, "sweeper", { start: () => void (startedAt = Date.now()), stop: () => {} }, { holder });
  return { role, startedAt: () => startedAt };
}

async function waitFor(check: () => boolean, timeoutMs: number): Promise<void> {
  for (const until = Date.now() + timeoutMs; !check(); await sleep(5)) if (Date.now() > until) throw new Error("timed out");
}

const killed: number[] = [];
const clean: number[] = [];
try {
  for (let round = 0; round < flags.rounds; round++) {
    // Baseline: clean stop between two processes' roles (here: two holders in this process).
    const a = contender(`a${round}`);
    const b = contender(`b${round}`);
    a.role.start();
    await waitFor(() => a.role.held, 10_000);
    b.role.start();
    await sleep(Math.random() * ROLE_RENEW_MS);
    const stoppedAt = Date.now();
    await a.role.stop();
    await waitFor(() => b.startedAt() > 0, ROLE_LEASE_MS + ROLE_RENEW_MS * 2);
    clean.push(b.startedAt() - stoppedAt);
    await b.role.stop();

    // kill -9 of a real child process holding the role.
    const child = spawn(
      process.execPath,
      ["--import", "tsx", "server/testing/sweeper-child.ts", String(ROLE_LEASE_MS), String(ROLE_RENEW_MS), String(SWEEP_MS)],
      {
        env: { ...process.env, DATABASE_URL: url, LOG_LEVEL: "warn" },
        stdio: ["ignore", "pipe", "inherit"],
        detached: true,
      },
    );
    await new Promise<void>((resolve) => child.stdout!.on("data", (chunk: Buffer) => chunk.toString().includes("held") && resolve()));
    const other = contender(`c${round}`);
    other.role.start();
    await sleep(ROLE_RENEW_MS + Math.random() * ROLE_RENEW_MS);
    process.kill(-child.pid!, "SIGKILL");
    const killedAt = Date.now();
    await waitFor(() => other.startedAt() > 0, ROLE_LEASE_MS + ROLE_RENEW_MS * 2);
    killed.push(other.startedAt() - killedAt);
    await other.role.stop();
    console.log(`round ${round + 1}: clean stop ${clean.at(-1)} ms, kill -9 ${killed.at(-1)} ms`);
  }
} finally {
  await stop();
}
const summary = (xs: number[]) =>
  `min ${Math.min(...xs)} ms, median ${[...xs].sort((p, q) => p - q)[Math.floor(xs.length / 2)]} ms, max ${Math.max(...xs)} ms`;
console.log(`lease ${ROLE_LEASE_MS} ms, renewal ${ROLE_RENEW_MS} ms, ${flags.rounds} rounds`);
console.log(`baseline, clean stop (row deleted): ${summary(clean)}`);
console.log(`holder killed -9 (lease runs out):  ${summary(killed)}`);
