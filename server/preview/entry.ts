/**
 * The way into a preview, on Labdeck's own origin (where the sign-in cookie is): the user's
 * access to the lab session is decided here, and the browser is sent on to the preview origin with
 * a short-lived code (grant.ts) that the origin exchanges for its own cookie. Used by
 * GET /api/sessions/:id/preview (owner or watcher) and GET /api/labs/:slug/preview (the learner's
 * own live session of a lab, what lesson links use).
 */
import { z } from "zod";
import type { Auth } from "../auth/auth";
import { type CurrentUser } from "../auth/guard";
import { Denied } from "../denied";
import type { Db } from "../db/client";
import { PreviewMachine, PreviewPath, PreviewPort, previewOrigin, type PreviewBase } from "./address";
import { PREVIEW_ENTER_PATH, signPreview } from "./grant";

export const PreviewQuery = z.object({ machine: PreviewMachine, port: PreviewPort, path: PreviewPath });

/** The query of an entry request (machine, port, path), or Denied(400). */
export function previewQuery(url: URL): z.infer<typeof PreviewQuery> {
  const parsed = PreviewQuery.safeParse({
    machine: url.searchParams.get("machine") ?? undefined,
    port: url.searchParams.get("port") ?? undefined,
    path: url.searchParams.get("path") ?? undefined,
  });
  if (!parsed.success) throw new Denied(400, "badRequest");
  return parsed.data;
}

/** The id of the request's better-auth sign-in (a preview ends with it). */
export async function signInId(auth: Auth, headers: Headers): Promise<string> {
  const result = await auth.api.getSession({ headers }).catch(() => null);
  if (!result) throw new Denied(401, "notSignedIn");
  return result.session.id;
}

/**
 * Where the browser goes next: `<preview origin>/__labdeck/enter?code=…`. The session must be
 * ready and have the machine (409 sessionNotLive, 404 noSuchMachine).
 */
export async function previewEntryUrl(
  deps: { db: Db; secret: Buffer; base: PreviewBase },
  who: { user: CurrentUser; signIn: string; access: "owner" | "watch" },
  sessionId: string,
  query: z.infer<typeof PreviewQuery>,
): Promise<string> {
  const session = await deps.db.labSession.findUnique({
    where: { id: sessionId },
    select: { state: true, machines: { where: { name: query.machine }, select: { name: true } } },
  });
  if (!session) throw new Denied(404, "noSuchSession");
  if (session.state !== "ready") throw new Denied(409, "sessionNotLive");
  if (session.machines.length === 0) throw new Denied(404, "noSuchMachine");
  const origin = previewOrigin(deps.base, { sessionId, machine: query.machine, port: query.port });
  if (!origin) throw new Denied(404, "noSuchMachine");
  const code = signPreview(deps.secret, {
    k: "code",
    sid: sessionId,
    m: query.machine,
    p: query.port,
    sub: who.user.id,
    si: who.signIn,
    access: who.access,
    next: query.path,
  });
  return `${origin}${PREVIEW_ENTER_PATH}?code=${encodeURIComponent(code)}`;
}
