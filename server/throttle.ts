/**
 * Rate limits (rate-limiter-flexible, counters in PostgreSQL through Prisma so every server
 * process shares them): manual checks, reboots and session starts per user (sign-in has limits of
 * its own, server/auth/sign-in-limits.ts). The client address is the peer's, or — only when the peer is one of
 * LABDECK_TRUSTED_PROXIES — the last X-Forwarded-For entry that is not a trusted proxy. server.ts
 * writes it into CLIENT_ADDRESS_HEADER (replacing whatever the client sent) for routes and better-auth.
 */
import type { IncomingMessage } from "node:http";
import { RateLimiterPrisma, RateLimiterRes } from "rate-limiter-flexible";
import type { Db } from "./db/client";

/** Set by server.ts on every request: the client's address as this server believes it. */
export const CLIENT_ADDRESS_HEADER = "x-labdeck-client-address";

const normalise = (address: string) => address.replace(/^::ffff:/, "");

export function clientAddress(req: IncomingMessage, trustedProxies: readonly string[]): string {
  const peer = normalise(req.socket.remoteAddress ?? "unknown");
  if (!trustedProxies.includes(peer)) return peer;
  const forwarded = String(req.headers["x-forwarded-for"] ?? "")
    .split(",")
    .map((a) => normalise(a.trim()))
    .filter(Boolean);
  for (let i = forwarded.length - 1; i >= 0; i--) if (!trustedProxies.includes(forwarded[i]!)) return forwarded[i]!;
  return peer;
}

/** Limits: points per window. */
export const LIMITS = {
  /** Check button presses per user. */
  check: { points: 30, duration: 60 },
  /** "Reboot and verify" presses per user (each reboots a VM: seconds of a host's CPU under TCG). */
  machineReboot: { points: 10, duration: 10 * 60 },
  /** Lab session starts/resumes per user (every lab page load is one). */
  sessionStart: { points: 20, duration: 60 },
} as const;
export type LimitName = keyof typeof LIMITS;

const limiters = new WeakMap<Db, Map<LimitName, RateLimiterPrisma>>();

function limiter(db: Db, name: LimitName): RateLimiterPrisma {
  let byName = limiters.get(db);
  if (!byName) limiters.set(db, (byName = new Map()));
  let l = byName.get(name);
  if (!l) {
    l = new RateLimiterPrisma({
      storeClient: db,
      tableName: "rateLimiterFlexible",
      keyPrefix: name,
      points: LIMITS[name].points,
      duration: LIMITS[name].duration,
      clearExpiredByTimeout: false,
    });
    byName.set(name, l);
  }
  return l;
}

/** Counts one attempt; null when allowed, else the seconds to wait. */
export async function consume(db: Db, name: LimitName, key: string): Promise<number | null> {
  try {
    await limiter(db, name).consume(key);
    return null;
  } catch (error) {
    if (error instanceof RateLimiterRes) return Math.max(1, Math.ceil(error.msBeforeNext / 1000));
    throw error;
  }
}

/** Forgets a key's count (a successful sign-in clears its account's failures). */
export async function forget(db: Db, name: LimitName, key: string): Promise<void> {
  await limiter(db, name)
    .delete(key)
    .catch(() => undefined);
}
