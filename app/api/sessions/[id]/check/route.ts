/** POST /api/sessions/:id/check — run the current step's check now (the Check button); the owner only. */
import { requireSession, requireUser } from "@/server/auth/guard";
import { tooManyRequests } from "@/server/http/route";
import { apiRoute } from "@/server/compose/route";
import { consume } from "@/server/throttle";

export const dynamic = "force-dynamic";

export const POST = apiRoute<{ params: Promise<{ id: string }> }>(async (request, context, services) => {
  const user = await requireUser(services.auth, request.headers);
  const { id } = await context.params;
  await requireSession(services.db, user, id, "input");
  const wait = await consume(services.db, "check", user.id);
  if (wait) return tooManyRequests(request, wait);
  services.sweeper.activity(id);
  return Response.json({ progress: await services.grader.checkNow(id) });
});
