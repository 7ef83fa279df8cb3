/**
 * POST /api/labs/:slug/session — start or resume the caller's session of a lab and hand out a
 * terminal token per machine. The caller is identified by the learner cookie (set here on first
 * visit) until accounts exist.
 */
import { randomBytes } from "node:crypto";
import { cookies } from "next/headers";
import { NextResponse } from "next/server";
import { loadLab } from "@/server/labs/load";
import { isNoCapacity } from "@/server/machines/provider";
import { log } from "@/server/log";
import { getServicesOrThrow } from "@/server/services";
import { startOrResumeSession } from "@/server/sessions/lab-sessions";
import { signTerminalToken } from "@/server/terminal/token";

export const dynamic = "force-dynamic";

/** Cookie naming the anonymous learner; httpOnly, so page scripts never see it. */
const LEARNER_COOKIE = "labdeck_learner";
const LEARNER_COOKIE_MAX_AGE_S = 180 * 24 * 60 * 60;

export async function POST(_request: Request, context: { params: Promise<{ slug: string }> }) {
  const { slug } = await context.params;
  const services = getServicesOrThrow();
  let lab;
  try {
    lab = await loadLab(services.env.LABDECK_LABS_DIR, slug);
  } catch {
    return NextResponse.json({ error: "no such lab" }, { status: 404 });
  }

  const jar = await cookies();
  let learnerId = jar.get(LEARNER_COOKIE)?.value;
  if (!learnerId || !/^[A-Za-z0-9_-]{16,64}$/.test(learnerId)) {
    learnerId = randomBytes(18).toString("base64url");
    jar.set(LEARNER_COOKIE, learnerId, {
      httpOnly: true,
      sameSite: "lax",
      path: "/",
      maxAge: LEARNER_COOKIE_MAX_AGE_S,
    });
  }

  try {
    const session = await startOrResumeSession(services.db, services.provider, {
      learnerId,
      labSlug: lab.slug,
      machines: lab.manifest.machines,
    });
    return NextResponse.json({
      sessionId: session.id,
      machines: session.machines.map((name) => ({
        name,
        token: signTerminalToken(services.secret, { sid: session.id, m: name, mode: "write", sub: learnerId }),
      })),
    });
  } catch (error) {
    if (isNoCapacity(error)) return NextResponse.json({ error: error.message }, { status: 503 });
    log.error({ slug, err: (error as Error).message }, "starting lab session failed");
    return NextResponse.json({ error: "ラボの開始に失敗しました。しばらくしてから再読み込みしてください。" }, { status: 500 });
  }
}
