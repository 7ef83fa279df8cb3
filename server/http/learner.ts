/**
 * Who is calling, for route handlers. Until accounts exist a learner is an opaque random id in
 * an httpOnly cookie, and owns the lab sessions started with it.
 */
import { randomBytes } from "node:crypto";
import { cookies } from "next/headers";
import { NextResponse } from "next/server";
import type { Services } from "../services";

/** Cookie naming the anonymous learner; httpOnly, so page scripts never see it. */
const LEARNER_COOKIE = "labdeck_learner";
const LEARNER_COOKIE_MAX_AGE_S = 180 * 24 * 60 * 60;
const LEARNER_ID = /^[A-Za-z0-9_-]{16,64}$/;

/** The caller's learner id, or null when the request carries none. */
export async function learnerId(): Promise<string | null> {
  const id = (await cookies()).get(LEARNER_COOKIE)?.value;
  return id && LEARNER_ID.test(id) ? id : null;
}

/** The caller's learner id, minting one (and setting the cookie) on a first visit. */
export async function learnerIdOrCreate(): Promise<string> {
  const existing = await learnerId();
  if (existing) return existing;
  const id = randomBytes(18).toString("base64url");
  (await cookies()).set(LEARNER_COOKIE, id, { httpOnly: true, sameSite: "lax", path: "/", maxAge: LEARNER_COOKIE_MAX_AGE_S });
  return id;
}

/**
 * The lab session `sessionId` if the caller owns it, else a 401/404 response to return as is
 * (404 also for someone else's session, so ids cannot be probed).
 */
export async function ownedSessionOr(
  services: Services,
  sessionId: string,
): Promise<{ session: { id: string; labSlug: string; learnerId: string }; response?: never } | { response: NextResponse; session?: never }> {
  const learner = await learnerId();
  if (!learner) return { response: NextResponse.json({ error: "not signed in" }, { status: 401 }) };
  const session = await services.db.labSession.findUnique({
    where: { id: sessionId },
    select: { id: true, labSlug: true, learnerId: true },
  });
  if (!session || session.learnerId !== learner) {
    return { response: NextResponse.json({ error: "no such session" }, { status: 404 }) };
  }
  return { session };
}
