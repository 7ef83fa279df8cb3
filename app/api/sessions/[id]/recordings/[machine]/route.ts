/**
 * GET one terminal's recording as asciicast v2 (markers at every step unlock and Check): same
 * access as the list; 429 beyond a few downloads at once per user. `:machine` is the terminal's
 * name: `node01`, or `node01#2` (URL-encoded) for an extra shell (server/terminal/tab-names.ts).
 */
import { z } from "zod";
import { requireUser } from "@/server/auth/guard";
import { Denied } from "@/server/denied";
import { sessionMarkers } from "@/server/recordings/asciicast";
import { castResponse } from "@/server/recordings/download";
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
  // Streamed a page of rows and a slice of text at a time, a few per user (download.ts).
  return castResponse(services.db, request, user.id, {
    sessionId: id,
    machine: name.data,
    markers: await sessionMarkers(services.db, id, titles),
    title: `${session.labSlug} ${name.data}`,
  });
});
