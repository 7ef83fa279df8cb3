import type { Metadata } from "next";
import Link from "next/link";
import { notFound } from "next/navigation";
import { getTranslations } from "next-intl/server";
import { ExamResult } from "@/components/exam/ExamResult";
import { requireSession } from "@/server/auth/guard";
import { pageUser } from "@/server/compose/page";
import { getServicesOrThrow } from "@/server/compose/services";
import { Denied } from "@/server/denied";
import { sessionLabById } from "@/server/sessions/lab-versions";

export const dynamic = "force-dynamic";

type Props = { params: Promise<{ sessionId: string }> };

export async function generateMetadata(): Promise<Metadata> {
  const t = await getTranslations("examResult");
  return { title: `${t("title")} — Labdeck` };
}

/**
 * The result of an exam attempt, for whoever may see its session (the learner, and those who may
 * watch it); anyone else gets 404, like a session that does not exist. The result itself comes
 * from the exam API in the browser, which waits while the attempt is still being scored.
 */
export default async function ExamResultPage({ params }: Props) {
  const { sessionId } = await params;
  const user = await pageUser(`/exams/result/${encodeURIComponent(sessionId)}`);
  const { db, labs } = getServicesOrThrow();
  const session = await requireSession(db, user, sessionId, "watch").catch((error: unknown) => {
    if (error instanceof Denied) notFound();
    throw error;
  });
  const lab = await sessionLabById(db, labs, sessionId).then(
    (v) => v.lab,
    () => null,
  );
  const t = await getTranslations("examResult");
  // Inside the layout's <main> (a page has no <main> of its own: one per document).
  return (
    <div className="flex min-h-0 flex-1 flex-col overflow-y-auto">
      <div className="flex h-10 shrink-0 items-center gap-3 border-b border-slate-200 bg-white px-4">
        <Link href="/" className="text-xs text-slate-500 hover:text-sky-700">
          ← {t("back")}
        </Link>
        <h1 className="truncate text-sm font-semibold">{t("heading", { lab: lab?.manifest.title ?? session.labSlug })}</h1>
      </div>
      <ExamResult sessionId={sessionId} />
    </div>
  );
}
