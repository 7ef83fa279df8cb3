/**
 * POST /api/labs/:slug/session — start or resume the caller's session of a lab (new sessions get
 * machines and the lab's setup) and hand out a terminal token per machine.
 */
import { NextResponse } from "next/server";
import { refuseUnbuiltImage } from "@/server/labs/image-status";
import { runLabSetup } from "@/server/labs/setup";
import { learnerIdOrCreate } from "@/server/http/learner";
import { log } from "@/server/log";
import { isNoCapacity } from "@/server/machines/provider";
import { getServicesOrThrow } from "@/server/services";
import { machineEndpoint, startOrResumeSession } from "@/server/sessions/lab-sessions";
import { signTerminalToken } from "@/server/terminal/token";

export const dynamic = "force-dynamic";

export async function POST(_request: Request, context: { params: Promise<{ slug: string }> }) {
  const { slug } = await context.params;
  const services = getServicesOrThrow();
  const lab = await services.labs.get(slug).catch(() => null);
  if (!lab) return NextResponse.json({ error: "no such lab" }, { status: 404 });
  const refusal = await refuseUnbuiltImage(services, lab);
  if (refusal) return NextResponse.json(refusal, { status: 503 });
  const learnerId = await learnerIdOrCreate();
  try {
    const session = await startOrResumeSession(
      services.db,
      services.provider,
      { learnerId, labSlug: lab.slug, machines: lab.manifest.machines, image: lab.manifest.image, limitMinutes: services.env.LABDECK_SESSION_MINUTES },
      (sessionId) => runLabSetup(services.pool, lab, (machine) => machineEndpoint(services.db, sessionId, machine)),
    );
    return NextResponse.json({
      sessionId: session.id,
      expiresAt: session.expiresAt?.toISOString() ?? null,
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
