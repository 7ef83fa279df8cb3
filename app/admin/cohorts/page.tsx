import Link from "next/link";
import { getFormatter, getTranslations } from "next-intl/server";
import { pageRole } from "@/server/compose/page";
import { listCohorts } from "@/server/cohorts/cohorts";
import { labsDirFromEnv, listLabs } from "@/server/labs/load";
import { getServicesOrThrow } from "@/server/compose/services";
import { CohortForm } from "./CohortForm";

export const dynamic = "force-dynamic";

/** Admin: every cohort, and a form to create one. */
export default async function CohortsAdminPage() {
  await pageRole("/admin/cohorts", "admin");
  const [cohorts, { labs }] = await Promise.all([listCohorts(getServicesOrThrow().db), listLabs(labsDirFromEnv())]);
  const t = await getTranslations("cohorts");
  const format = await getFormatter();
  const when = (d: Date | null) => (d ? format.dateTime(d, "dateTime") : "—");
  return (
    <div className="min-h-0 flex-1 overflow-y-auto">
      <div className="mx-auto max-w-5xl px-6 py-8">
        <h1 className="text-2xl font-bold">{t("title")}</h1>
        <p className="mt-1 text-sm text-slate-600">{t("intro")}</p>
        {cohorts.length === 0 ? (
          <p className="mt-4 text-sm text-slate-500">{t("empty")}</p>
        ) : (
          <table className="mt-4 w-full text-left text-sm" data-testid="cohort-list">
            <thead className="text-xs text-slate-500">
              <tr>
                <th className="py-1">{t("name")}</th>
                <th>{t("startsAt")}</th>
                <th>{t("endsAt")}</th>
                <th>{t("learners")}</th>
                <th>{t("instructors")}</th>
                <th>{t("status")}</th>
                <th />
              </tr>
            </thead>
            <tbody>
              {cohorts.map((c) => (
                <tr key={c.id} className="border-t border-slate-200" data-cohort={c.id}>
                  <td className="py-1.5 font-medium">{c.name}</td>
                  <td>{when(c.startsAt)}</td>
                  <td>{when(c.endsAt)}</td>
                  <td>{c.learners}</td>
                  <td>{c.instructors}</td>
                  <td>{c.endedAt ? t("ended", { date: when(c.endedAt) }) : t("active")}</td>
                  <td className="space-x-3 text-right">
                    <Link className="text-sky-700 hover:underline" href={`/admin/cohorts/${c.id}`}>
                      {t("manage")}
                    </Link>
                    <Link className="text-sky-700 hover:underline" href={`/cohorts/${c.id}`}>
                      {t("dashboard")}
                    </Link>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
        <h2 className="mt-10 text-lg font-semibold">{t("create")}</h2>
        <CohortForm catalog={labs.map((l) => ({ slug: l.slug, title: l.manifest.title }))} />
      </div>
    </div>
  );
}
