/** POST /api/sessions/:id/check — run the current step's check now (the Check button). */
import { NextResponse } from "next/server";
import { ownedSessionOr } from "@/server/http/learner";
import { getServicesOrThrow } from "@/server/services";

export const dynamic = "force-dynamic";

export async function POST(_request: Request, context: { params: Promise<{ id: string }> }) {
  const { id } = await context.params;
  const services = getServicesOrThrow();
  const owned = await ownedSessionOr(services, id);
  if (owned.response) return owned.response;
  services.sweeper.activity(id);
  return NextResponse.json({ progress: await services.grader.checkNow(id) });
}
