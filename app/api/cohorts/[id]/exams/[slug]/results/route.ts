/**
 * GET /api/cohorts/:id/exams/:slug/results — a cohort's results of one exam: per learner the total,
 * pass/fail, per task the points and time spent. `?format=csv`: the same as a CSV file (UTF-8 with
 * a BOM, headings in the caller's language). Admins and the cohort's instructors.
 */
import { requireRole } from "@/server/auth/guard";
import { requireCohortView } from "@/server/cohorts/access";
import { cohortRoute } from "@/server/compose/route";
import { cohortExamResults, resultsCsv } from "@/server/exams/cohort-results";
import { localeFromHeaders, MESSAGES } from "@/server/i18n/locale";

export const dynamic = "force-dynamic";

export const GET = cohortRoute<{ params: Promise<{ id: string; slug: string }> }>(async (request, context, services) => {
  const user = await requireRole(services.auth, request.headers, "admin", "instructor");
  const { id, slug } = await context.params;
  await requireCohortView(services.db, user, id);
  const results = await cohortExamResults(services.db, services.labs, id, slug);
  if (new URL(request.url).searchParams.get("format") !== "csv") return Response.json(results);
  const h = MESSAGES[localeFromHeaders(request.headers)].examCsv;
  const csv = resultsCsv(results, {
    ...h,
    taskPoints: (title) => h.taskPoints.replace("{name}", () => title),
    taskMinutes: (title) => h.taskMinutes.replace("{name}", () => title),
  });
  return new Response(csv, {
    headers: {
      "content-type": "text/csv; charset=utf-8",
      "content-disposition": `attachment; filename="${slug}-results.csv"`,
    },
  });
});
