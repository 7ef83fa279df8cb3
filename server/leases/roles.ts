/**
 * Background roles that must run on exactly one server process at a time (the session sweeper;
 * the warm pool's refill, per machine host). Each role is a `RoleLease` row: the process that
 * holds it renews `leaseUntil` every `renewMs`; a process that finds the lease run out (its
 * holder died or stopped renewing) takes it over with the same conditional write. A clean stop
 * deletes the row, so another process takes over at its next renewal instead of after the lease.
 *
 * Times are the database's clock (as in server/grader/claims.ts), so processes on hosts with
 * skewed clocks still agree; `timestamp(3)` in UTC, hence `now() AT TIME ZONE 'UTC'`.
 */
import { randomUUID } from "node:crypto";
import os from "node:os";
import type { Logger } from "pino";
import type { Db } from "../db/client";

/** A role's lease without renewal, ms: how long a dead holder keeps its role at most. */
export const ROLE_LEASE_MS = 15_000;
/** The holder renews (and the others try to take over) this often, ms. */
export const ROLE_RENEW_MS = 5_000;

/** This process's id as a lease holder: host name (readable in the row), pid, and a random part (pids are reused). */
export const PROCESS_HOLDER = `${os.hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;

/**
 * Takes or renews role `name` for `holder` until now + `leaseMs`; true when `holder` has it. Of
 * several processes trying at once, one wins (the primary key and the conditional upsert).
 */
export async function claimRole(db: Db, name: string, holder: string, leaseMs: number): Promise<boolean> {
  const rows = await db.$queryRaw<{ holder: string }[]>`
    INSERT INTO "RoleLease" ("name", "holder", "leaseUntil", "heldSince")
    VALUES (${name}, ${holder}, (now() AT TIME ZONE 'UTC') + make_interval(secs => ${leaseMs / 1000}::double precision), now() AT TIME ZONE 'UTC')
    ON CONFLICT ("name") DO UPDATE
       SET "holder" = EXCLUDED."holder",
           "leaseUntil" = EXCLUDED."leaseUntil",
           "heldSince" = CASE WHEN "RoleLease"."holder" = EXCLUDED."holder" THEN "RoleLease"."heldSince" ELSE EXCLUDED."heldSince" END
     WHERE "RoleLease"."holder" = EXCLUDED."holder" OR "RoleLease"."leaseUntil" < (now() AT TIME ZONE 'UTC')
    RETURNING "holder"`;
  return rows.length === 1;
}

/** Gives the role up at once (only if `holder` has it). */
export async function releaseRole(db: Db, name: string, holder: string): Promise<void> {
  await db.$executeRaw`DELETE FROM "RoleLease" WHERE "name" = ${name} AND "holder" = ${holder}`;
}

/** What a role does while this process holds it. */
export interface RoleWork {
  start(): void | Promise<void>;
  stop(): void | Promise<void>;
}

/**
 * Runs `work` only while this process holds role `name`: started when the lease is won, stopped
 * when it is lost (another process has it) or when this process stops. Renewal failures (the
 * database away) stop the work once the lease may have run out, so two holders never overlap by
 * more than one renewal.
 */
export class SingletonRole {
  private timer: NodeJS.Timeout | null = null;
  private ticking: Promise<void> = Promise.resolve();
  private holding = false;
  private renewedAt = 0;
  private stopped = false;
  readonly holder: string;
  private readonly leaseMs: number;
  private readonly renewMs: number;

  constructor(
    private readonly deps: { db: Db; log: Logger },
    readonly name: string,
    private readonly work: RoleWork,
    options: { holder?: string; leaseMs?: number; renewMs?: number } = {},
  ) {
    this.holder = options.holder ?? PROCESS_HOLDER;
    this.leaseMs = options.leaseMs ?? ROLE_LEASE_MS;
    this.renewMs = options.renewMs ?? ROLE_RENEW_MS;
    if (this.renewMs * 2 > this.leaseMs)
      throw new Error(`role ${name}: renewal (${this.renewMs} ms) must be at most half the lease (${this.leaseMs} ms)`);
  }

  /** Whether this process runs the role now. */
  get held(): boolean {
    return this.holding;
  }

  /** Tries at once, then every renewal interval. */
  start(): void {
    if (this.timer || this.stopped) return;
    this.timer = setInterval(() => this.tick(), this.renewMs);
    this.timer.unref();
    this.tick();
  }

  /** Stops the work (if held) and gives the lease up, so another process takes over at once. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.ticking;
    if (this.holding) await this.lose("stopping");
    // Also when not holding: a claim that was in flight as stop began may have won the lease
    // (it then did not start the work); left, it would block the others until it ran out.
    await releaseRole(this.deps.db, this.name, this.holder).catch((error: Error) =>
      this.deps.log.warn({ role: this.name, err: error.message }, "releasing a role lease failed; it runs out by itself"),
    );
  }

  private tick(): void {
    this.ticking = this.ticking.then(() => this.renew());
  }

  private async renew(): Promise<void> {
    if (this.stopped) return;
    let won: boolean;
    try {
      won = await claimRole(this.deps.db, this.name, this.holder, this.leaseMs);
    } catch (error) {
      // Unknown whether the lease holds: keep working only while it surely does.
      if (this.holding && Date.now() - this.renewedAt > this.leaseMs - this.renewMs) await this.lose("lease not renewed");
      this.deps.log.warn({ role: this.name, err: (error as Error).message }, "role lease renewal failed");
      return;
    }
    if (won) this.renewedAt = Date.now();
    if (won && !this.holding && !this.stopped) {
      this.holding = true;
      this.deps.log.info({ role: this.name, holder: this.holder }, "role taken");
      try {
        await this.work.start();
      } catch (error) {
        this.deps.log.error({ role: this.name, err: (error as Error).message }, "role failed to start");
      }
    } else if (!won && this.holding) {
      await this.lose("another process holds it");
    }
  }

  private async lose(why: string): Promise<void> {
    this.holding = false;
    this.deps.log.info({ role: this.name, holder: this.holder, why }, "role given up");
    try {
      await this.work.stop();
    } catch (error) {
      this.deps.log.error({ role: this.name, err: (error as Error).message }, "role failed to stop");
    }
  }
}
