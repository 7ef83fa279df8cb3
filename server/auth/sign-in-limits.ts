/**
 * Sign-in limits that stop a password guesser without locking a class out. Only failures count
 * (a successful sign-in gives its point back), and they count three ways:
 *   - per account and client address: a guesser's budget at any one address, for everyone;
 *   - per account, and per client address: past these, only account + address pairs that have
 *     signed in before go through, so a guesser elsewhere, or a classmate behind the same NAT
 *     failing at other accounts, does not lock out a learner who signs in from where they did.
 * Counters live in PostgreSQL (rate-limiter-flexible through Prisma) so every process shares them.
 * better-auth's own per-address sign-in limit is off (server/auth/auth.ts): three a 10 s per
 * address, per process, it would queue a whole classroom behind one NAT.
 */
import { RateLimiterPrisma, RateLimiterRes } from "rate-limiter-flexible";
import type { Db } from "../db/client";

/** Failure limits: points per window (seconds). */
export const SIGN_IN_LIMITS = {
  /** Failures per account from one address: 10 guesses per 15 minutes at any one address. */
  signInPair: { points: 10, duration: 15 * 60 },
  /** Failures per account from every address: past 50, only pairs known to have signed in pass. */
  signInAccount: { points: 50, duration: 15 * 60 },
  /** Failures from one address over every account: past 100, only known pairs pass. */
  signInAddress: { points: 100, duration: 15 * 60 },
} as const;

/** How long an account + address pair that signed in stays known, in seconds (renewed at each sign-in): 30 days. */
export const KNOWN_PAIR_S = 30 * 24 * 60 * 60;

type Counter = keyof typeof SIGN_IN_LIMITS | "signInKnown";

const limiters = new WeakMap<Db, Map<Counter, RateLimiterPrisma>>();

function limiter(db: Db, name: Counter): RateLimiterPrisma {
  let byName = limiters.get(db);
  if (!byName) limiters.set(db, (byName = new Map()));
  let l = byName.get(name);
  if (!l) {
    const { points, duration } = name === "signInKnown" ? { points: 1, duration: KNOWN_PAIR_S } : SIGN_IN_LIMITS[name];
    l = new RateLimiterPrisma({
      storeClient: db,
      tableName: "rateLimiterFlexible",
      keyPrefix: name,
      points,
      duration,
      clearExpiredByTimeout: false,
    });
    byName.set(name, l);
  }
  return l;
}

/** One sign-in attempt: the account (email, lower case) and the client address server.ts computed. */
export interface SignInAttempt {
  account: string;
  address: string;
}

const pairKey = ({ account, address }: SignInAttempt) => JSON.stringify([account, address]);
const waitOf = (res: RateLimiterRes) => Math.max(1, Math.ceil(res.msBeforeNext / 1000));

/** Seconds until a counter at its limit opens again, or null while it is under. */
async function over(db: Db, name: keyof typeof SIGN_IN_LIMITS, key: string): Promise<number | null> {
  const res = await limiter(db, name).get(key);
  return res && res.consumedPoints >= SIGN_IN_LIMITS[name].points ? waitOf(res) : null;
}

/**
 * Runs `signIn` (better-auth's handler) unless the limits refuse the attempt: then the seconds to
 * wait. The pair's point is taken before the password is tried, so parallel guesses cannot all
 * pass one check; a success, a refusal before trying and a server error give it back.
 */
export async function signInWithinLimits(
  db: Db,
  attempt: SignInAttempt,
  signIn: () => Promise<Response>,
): Promise<{ response: Response } | { retryAfterSeconds: number }> {
  const pair = pairKey(attempt);
  try {
    await limiter(db, "signInPair").consume(pair);
  } catch (error) {
    if (error instanceof RateLimiterRes) return { retryAfterSeconds: waitOf(error) };
    throw error;
  }
  const known = (await limiter(db, "signInKnown").get(pair)) !== null;
  const wait = known ? null : ((await over(db, "signInAccount", attempt.account)) ?? (await over(db, "signInAddress", attempt.address)));
  if (wait) {
    await limiter(db, "signInPair").reward(pair);
    return { retryAfterSeconds: wait };
  }
  let response: Response;
  try {
    response = await signIn();
  } catch (error) {
    await limiter(db, "signInPair").reward(pair);
    throw error;
  }
  await settle(db, attempt, response.status);
  return { response };
}

/** After better-auth answered: a success forgets the pair's failures and knows the pair; a refusal counts everywhere. */
async function settle(db: Db, attempt: SignInAttempt, status: number): Promise<void> {
  const pair = pairKey(attempt);
  if (status >= 200 && status < 300) {
    await limiter(db, "signInPair").delete(pair);
    await limiter(db, "signInKnown").set(pair, 1, KNOWN_PAIR_S);
    return;
  }
  if (status >= 500) {
    await limiter(db, "signInPair").reward(pair);
    return;
  }
  // penalty() adds a point without refusing, whatever the count (consume() would throw past it).
  await limiter(db, "signInAccount").penalty(attempt.account);
  await limiter(db, "signInAddress").penalty(attempt.address);
}
