import type { Metadata } from "next";
import Link from "next/link";
import { notFound } from "next/navigation";
import { getTranslations } from "next-intl/server";
import { ExamResultsTable } from "@/components/cohorts/ExamResultsTable";
import { pageRole } from "@/server/compose/page";
import { getServicesOrThrow } from "@/server/compose/services";
import { Denied } from "@/server/denied";
import { cohortExamResults } from "@/server/exams/cohort-results";
import { cohortPageRefusal } from "../../cohort-page-guard";

export const dynamic = "force-dynamic";

type Props = { params: Promise<{ id: string; slug: string }> };

export async function generateMetadata(): Promise<Metadata> {
  const t = await getTranslations("examResults");
  return { title: `${t("title")} — Labdeck` };
}

/**
 * A cohort's results of one exam (ExamResultsTable), guarded like the cohort's dashboard: its
 * instructors and admins; an instructor of an ended cohort is told so; anyone else, and a slug
 * that is not one of the cohort's exams, gets 404.
 */
export default async function CohortExamResultsPage({ params }: Props) {
  const { id, slug } = await params;
  const user = await pageRole(`/cohorts/${id}/exams/${slug}`, "instructor", "admin");
  const { db, labs } = getServicesOrThrow();
  const refusal = await cohortPageRefusal(db, user, id);
  if (refusal) return refusal;
  const results = await cohortExamResults(db, labs, id, slug).catch((error: unknown) => {
    if (error instanceof Denied) notFound();
    throw error;
  });
  const t = await getTranslations("examResults");
  return (
    <div className="min-h-0 flex-1 overflow-y-auto">
      <div className="mx-auto max-w-7xl px-6 py-6">
        <Link href={`/cohorts/${encodeURIComponent(id)}`} className="text-xs text-slate-500 hover:text-sky-700">
          ← {t("back")}
        </Link>
        <h1 className="mt-1 text-xl font-bold">{t("heading", { lab: results.title })}</h1>
        <ExamResultsTable cohortId={id} results={results} />
      </div>
    </div>
  );
}
