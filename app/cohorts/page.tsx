import Link from "next/link";
import { getTranslations } from "next-intl/server";
import { pageRole } from "@/server/compose/page";
import { listCohorts } from "@/server/cohorts/cohorts";
import { getServicesOrThrow } from "@/server/compose/services";

export const dynamic = "force-dynamic";

/** Instructors: the cohorts they teach (admins: every cohort), each opening its dashboard. */
export default async function CohortsPage() {
  const user = await pageRole("/cohorts", "instructor", "admin");
  const cohorts = await listCohorts(getServicesOrThrow().db, user.role === "admin" ? {} : { instructorId: user.id });
  const t = await getTranslations("cohorts");
  return (
    <div className="min-h-0 flex-1 overflow-y-auto">
      <div className="mx-auto max-w-4xl px-6 py-8">
        <h1 className="text-2xl font-bold">{t("title")}</h1>
        {cohorts.length === 0 ? (
          <p className="mt-4 text-sm text-slate-500">{t("empty")}</p>
        ) : (
          <ul className="mt-4 space-y-2" data-testid="my-cohorts">
            {cohorts.map((c) => (
              <li key={c.id} className="flex items-center gap-4 rounded border border-slate-200 bg-white px-4 py-2 text-sm">
                <span className="font-medium">{c.name}</span>
                <span className="text-xs text-slate-500">
                  {t("learners")}: {c.learners}
                </span>
                <Link href={`/cohorts/${c.id}`} className="ml-auto text-sky-700 hover:underline">
                  {t("dashboard")}
                </Link>
              </li>
            ))}
          </ul>
        )}
      </div>
    </div>
  );
}
