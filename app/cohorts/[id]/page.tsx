import Link from "next/link";
import { getTranslations } from "next-intl/server";
import { pageRole } from "@/server/compose/page";
import { getCohortOrThrow } from "@/server/cohorts/cohorts";
import { cohortDashboard } from "@/server/cohorts/dashboard";
import { getServicesOrThrow } from "@/server/compose/services";
import { CohortDashboard } from "./CohortDashboard";
import { cohortPageRefusal } from "./cohort-page-guard";

export const dynamic = "force-dynamic";

/** The instructor dashboard of a cohort: first render on the server, then live (CohortDashboard). */
export default async function CohortDashboardPage({
  params,
  searchParams,
}: {
  params: Promise<{ id: string }>;
  searchParams: Promise<{ lab?: string }>;
}) {
  const { id } = await params;
  const { lab } = await searchParams;
  const user = await pageRole(`/cohorts/${id}`, "instructor", "admin");
  const { db, labs } = getServicesOrThrow();
  const refusal = await cohortPageRefusal(db, user, id);
  if (refusal) return refusal;
  const cohort = await getCohortOrThrow(db, id);
  const initial = await cohortDashboard(db, labs, id, lab);
  const manifests = await Promise.all(
    cohort.labs.map(async (slug) => ({ slug, manifest: (await labs.get(slug).catch(() => null))?.manifest })),
  );
  const titles = manifests.map(({ slug, manifest }) => ({ slug, title: manifest?.title ?? slug }));
  const exams = manifests.filter(({ manifest }) => manifest?.mode === "exam");
  const t = await getTranslations("dashboard");
  const te = await getTranslations("examResults");
  return (
    <div className="min-h-0 flex-1 overflow-y-auto">
      <div className="mx-auto max-w-7xl px-6 py-6">
        <h1 className="text-xl font-bold">{t("title", { name: cohort.name })}</h1>
        {exams.length > 0 && (
          <nav className="mt-2 flex flex-wrap gap-4 text-sm" data-testid="exam-results-links">
            {exams.map(({ slug, manifest }) => (
              <Link
                key={slug}
                href={`/cohorts/${encodeURIComponent(id)}/exams/${encodeURIComponent(slug)}`}
                className="font-semibold text-sky-700 hover:underline"
              >
                {te("dashboardLink", { lab: manifest?.title ?? slug })}
              </Link>
            ))}
          </nav>
        )}
        <CohortDashboard cohortId={id} labs={titles} initial={initial} isAdmin={user.role === "admin"} />
      </div>
    </div>
  );
}
