import Link from "next/link";
import { notFound } from "next/navigation";
import { getTranslations } from "next-intl/server";
import { Denied } from "@/server/denied";
import { pageUser } from "@/server/compose/page";
import { requireRecordingAccess } from "@/server/recordings/access";
import { getServicesOrThrow } from "@/server/compose/services";
import { sessionLabById } from "@/server/sessions/lab-versions";
import { RecordingPlayer } from "@/components/recordings/RecordingPlayer";

export const dynamic = "force-dynamic";

/**
 * Replay of a lab session's terminal recordings with its step markers: the learner's own, and
 * for instructors of the learner's live cohort and admins (opened from the cohort dashboard).
 * Anyone else gets 404, like a session that does not exist.
 */
export default async function ReplayPage(props: {
  params: Promise<{ sessionId: string }>;
  searchParams: Promise<Record<string, string | string[] | undefined>>;
}) {
  const { sessionId } = await props.params;
  // `?machine=node01&marker=task:etcd` (an exam result's link): that machine's recording, at the marker.
  const { machine, marker } = await props.searchParams;
  const user = await pageUser(`/replay/${sessionId}`);
  const { db, labs } = getServicesOrThrow();
  const session = await requireRecordingAccess(db, user, sessionId).catch((error: unknown) => {
    if (error instanceof Denied) notFound();
    throw error;
  });
  const [recordings, learner, lab] = await Promise.all([
    db.terminalRecording.findMany({ where: { sessionId }, orderBy: { machine: "asc" }, select: { machine: true, truncated: true } }),
    db.user.findUnique({ where: { id: session.learnerId }, select: { name: true } }),
    sessionLabById(db, labs, sessionId).then(
      (v) => v.lab,
      () => null,
    ),
  ]);
  const t = await getTranslations("recording");
  // Inside the layout's <main> (a page has no <main> of its own: one per document).
  return (
    <div className="flex min-h-0 flex-1 flex-col">
      <div className="flex h-10 shrink-0 items-center gap-3 border-b border-slate-200 bg-white px-4">
        <Link href="/" className="text-xs text-slate-500 hover:text-sky-700">
          ← {t("back")}
        </Link>
        <h1 className="truncate text-sm font-semibold">
          {t("title", { name: learner?.name ?? "?", lab: lab?.manifest.title ?? session.labSlug })}
        </h1>
      </div>
      {recordings.length === 0 ? (
        <p className="p-4 text-sm text-slate-500">{t("none")}</p>
      ) : (
        <RecordingPlayer
          sessionId={sessionId}
          recordings={recordings}
          initialMachine={typeof machine === "string" ? machine : undefined}
          jumpTo={typeof marker === "string" ? marker : undefined}
        />
      )}
    </div>
  );
}
