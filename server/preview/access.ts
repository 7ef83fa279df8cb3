/**
 * Whether a preview code or grant still stands, decided against the database: its sign-in still
 * exists and has not expired (signing out ends every preview of that sign-in), the user still has
 * the access it names on the lab session (`accessTo`, the guard's one rule: owner, or watcher as
 * an admin or an instructor of a live cohort of the learner), and the lab session is ready.
 */
import type { Db } from "../db/client";
import { accessTo, isRole } from "../auth/guard";
import type { PreviewClaims } from "./grant";

export type PreviewAccess = (claims: PreviewClaims) => Promise<"owner" | "watch" | null>;

export function previewAccess(db: Db): PreviewAccess {
  return async (claims) => {
    const signIn = await db.session.findUnique({ where: { id: claims.si }, select: { userId: true, expiresAt: true } });
    if (!signIn || signIn.userId !== claims.sub || signIn.expiresAt.getTime() <= Date.now()) return null;
    const user = await db.user.findUnique({ where: { id: claims.sub }, select: { id: true, email: true, name: true, role: true } });
    if (!user) return null;
    const session = await db.labSession.findUnique({
      where: { id: claims.sid },
      select: { learnerId: true, state: true, inputClosedAt: true },
    });
    if (!session || session.state !== "ready") return null;
    const access = await accessTo(db, { ...user, role: isRole(user.role) ? user.role : "learner" }, session.learnerId);
    // An exam handed in: a page the learner serves from a machine (a web shell, say) is no way back in.
    if (access === "owner" && session.inputClosedAt) return null;
    return access === claims.access ? access : null;
  };
}
