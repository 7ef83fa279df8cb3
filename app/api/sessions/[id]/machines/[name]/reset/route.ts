/**
 * POST /api/sessions/:id/machines/:name/reset — puts the caller's machine back to the lab's start
 * (fresh disk, then the lab's setup for it); answers when it is ready. Steps done stay done.
 */
import { NextResponse } from "next/server";
import { ownedSessionOr } from "@/server/http/learner";
import { runLabSetup } from "@/server/labs/setup";
import { log } from "@/server/log";
import { getServicesOrThrow } from "@/server/services";
import { machineEndpoint, resetMachine } from "@/server/sessions/lab-sessions";

export const dynamic = "force-dynamic";

export async function POST(_request: Request, context: { params: Promise<{ id: string; name: string }> }) {
  const { id, name } = await context.params;
  const services = getServicesOrThrow();
  const owned = await ownedSessionOr(services, id);
  if (owned.response) return owned.response;
  services.sweeper.activity(id);
  try {
    const lab = await services.labs.get(owned.session.labSlug);
    const done = await resetMachine(services.db, services.provider, id, name, () =>
      runLabSetup(services.pool, lab, (machine) => machineEndpoint(services.db, id, machine), [name]),
    );
    if (!done) return NextResponse.json({ error: "このマシンはリセットできません" }, { status: 404 });
    return NextResponse.json({ ok: true });
  } catch (error) {
    log.error({ sessionId: id, machine: name, err: (error as Error).message }, "resetting a machine failed");
    return NextResponse.json({ error: "マシンをリセットできませんでした。しばらくしてからもう一度お試しください。" }, { status: 500 });
  }
}
