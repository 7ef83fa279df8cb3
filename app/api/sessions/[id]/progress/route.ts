/** GET /api/sessions/:id/progress — the caller's progress in their lab session. */
import { NextResponse } from "next/server";
import { ownedSessionOr } from "@/server/http/learner";
import { getServicesOrThrow } from "@/server/services";

export const dynamic = "force-dynamic";

export async function GET(_request: Request, context: { params: Promise<{ id: string }> }) {
  const { id } = await context.params;
  const services = getServicesOrThrow();
  const owned = await ownedSessionOr(services, id);
  if (owned.response) return owned.response;
  return NextResponse.json(await services.grader.progress(id));
}
