/**
 * GET one terminal's recording as asciicast v2 (markers at every step unlock and Check): same
 * access as the list. `:machine` is the terminal's name: `node01`, or `node01#2` (URL-encoded) for
 * an extra shell (server/terminal/tab-names.ts).
 */
import { z } from "zod";
import { requireUser } from "@/server/auth/guard";
import { Denied } from "@/server/denied";
import { castLines, sessionMarkers } from "@/server/recordings/asciicast";
import { requireRecordingAccess } from "@/server/recordings/access";
import { apiRoute } from "@/server/compose/route";
import { sessionLabById } from "@/server/sessions/lab-versions";

export const dynamic = "force-dynamic";

const MachineName = z.string().regex(/^[a-z0-9][a-z0-9-]{0,62}(#[0-9]{1,2})?$/);

export const GET = apiRoute<{ params: Promise<{ id: string; machine: string }> }>(async (request, context, services) => {
  const user = await requireUser(services.auth, request.headers);
  const { id, machine } = await context.params;
  const session = await requireRecordingAccess(services.db, user, id);
  const name = MachineName.safeParse(machine);
  if (!name.success) throw new Denied(404, "noSuchRecording");
  const lab = (await sessionLabById(services.db, services.labs, id).catch(() => null))?.lab ?? null;
  const titles = new Map((lab?.manifest.steps ?? []).map((s) => [s.id, s.title]));
  const lines = await castLines(
    services.db,
    id,
    name.data,
    await sessionMarkers(services.db, id, titles),
    `${session.labSlug} ${name.data}`,
  );
  if (!lines) throw new Denied(404, "noSuchRecording");
  // Streamed a page of rows at a time (asciicast.ts): a long recording is never whole in memory.
  const encoder = new TextEncoder();
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      const next = await lines.next();
      if (next.done) controller.close();
      else controller.enqueue(encoder.encode(next.value));
    },
    async cancel() {
      await lines.return(undefined);
    },
  });
  return new Response(body, {
    headers: { "content-type": "application/x-asciicast; charset=utf-8", "cache-control": "private, no-store" },
  });
});
