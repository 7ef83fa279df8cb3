/**
 * POST /api/sessions/:id/machines/:name/start — powers the caller's machine on again after a
 * poweroff or crash (a hard reset when it runs); answers when it takes SSH again.
 */
import { NextResponse } from "next/server";
import { ownedSessionOr } from "@/server/http/learner";
import { log } from "@/server/log";
import { getServicesOrThrow } from "@/server/services";
import { restartMachine } from "@/server/sessions/lab-sessions";

export const dynamic = "force-dynamic";

export async function POST(_request: Request, context: { params: Promise<{ id: string; name: string }> }) {
  const { id, name } = await context.params;
  const services = getServicesOrThrow();
  const owned = await ownedSessionOr(services, id);
  if (owned.response) return owned.response;
  services.sweeper.activity(id);
  try {
    const done = await restartMachine(services.db, services.provider, id, name);
    if (!done) return NextResponse.json({ error: "このマシンは起動できません" }, { status: 404 });
    return NextResponse.json({ ok: true });
  } catch (error) {
    log.error({ sessionId: id, machine: name, err: (error as Error).message }, "starting a machine failed");
    return NextResponse.json({ error: "マシンを起動できませんでした。しばらくしてからもう一度お試しください。" }, { status: 500 });
  }
}
