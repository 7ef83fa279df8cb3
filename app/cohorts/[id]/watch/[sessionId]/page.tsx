import { notFound } from "next/navigation";
import { getTranslations } from "next-intl/server";
import { sessionAccess } from "@/server/auth/guard";
import { pageRole } from "@/server/compose/page";
import { getServicesOrThrow } from "@/server/compose/services";
import { sessionLabById } from "@/server/sessions/lab-versions";
import { WatchView } from "./WatchView";

export const dynamic = "force-dynamic";

/**
 * An instructor (of the learner's cohort) or admin watches a learner's three terminals read-only.
 * The terminal sockets carry read tokens; the gateway refuses input from them, reports the
 * viewer (the learner sees a notice) and the view is written to the audit log.
 */
export default async function WatchPage({ params }: { params: Promise<{ id: string; sessionId: string }> }) {
  const { id, sessionId } = await params;
  const user = await pageRole(`/cohorts/${id}/watch/${sessionId}`, "instructor", "admin");
  const { db, labs } = getServicesOrThrow();
  if ((await sessionAccess(db, user, sessionId)) !== "watch") notFound();
  const session = await db.labSession.findUniqueOrThrow({
    where: { id: sessionId },
    select: { labSlug: true, learnerId: true, machines: { select: { name: true } } },
  });
  const learner = await db.user.findUnique({ where: { id: session.learnerId }, select: { name: true } });
  // The steps of the session's own lab version.
  const lab = (await sessionLabById(db, labs, sessionId).catch(() => null))?.lab ?? null;
  const t = await getTranslations("dashboard");
  const machines = lab?.manifest.machines ?? session.machines.map((m) => m.name).sort();
  return (
    <WatchView
      cohortId={id}
      sessionId={sessionId}
      slug={session.labSlug}
      machines={machines}
      title={t("watchTitle", { name: learner?.name ?? "?" })}
      steps={lab?.steps.map((s) => ({ id: s.id, title: s.title })) ?? []}
    />
  );
}
