import Link from "next/link";
import { getFormatter, getTranslations } from "next-intl/server";
import { pageUser } from "@/server/compose/page";
import { labsDirFromEnv, listLabs, type Lab } from "@/server/labs/load";
import { storedLabVersion } from "@/server/labs/versions";
import { getServicesOrThrow } from "@/server/compose/services";
import { LIVE_STATES } from "@/server/sessions/lifecycle";

// Lab content is read from disk on every request so an edited lab shows up without a rebuild.
export const dynamic = "force-dynamic";

type HomeTranslator = Awaited<ReturnType<typeof getTranslations<"home">>>;
type Formatter = Awaited<ReturnType<typeof getFormatter>>;

/** The signed-in user's home: their live sessions (resume) and the lab catalog (start or resume). */
export default async function HomePage() {
  const user = await pageUser("/");
  const { labs, errors, live, cohorts, stepCounts } = await homeData(user.id);
  const now = new Date();
  const t = await getTranslations("home");
  const format = await getFormatter();
  const liveBySlug = new Map(live.map((s) => [s.labSlug, s]));
  const titles = new Map(labs.map((l) => [l.slug, l]));
  return (
    <div className="min-h-0 flex-1 overflow-y-auto">
      <div className="mx-auto max-w-5xl px-6 py-8">
        <LiveSessions live={live} titles={titles} stepCounts={stepCounts} now={now} t={t} format={format} />

        {cohorts.length > 0 && <MyCohorts cohorts={cohorts} titles={titles} t={t} format={format} />}

        <h1 className="mt-10 text-2xl font-bold">{t("heading")}</h1>
        <p className="mt-1 text-sm text-slate-600">{t("intro")}</p>

        {labs.length === 0 && errors.length === 0 && <p className="mt-8 text-slate-500">{t("empty")}</p>}

        <ul className="mt-6 grid gap-4 sm:grid-cols-2" data-testid="lab-catalog">
          {labs.map((lab) => (
            <li key={lab.slug}>
              <LabCard lab={lab} resume={liveBySlug.has(lab.slug)} t={t} />
            </li>
          ))}
        </ul>

        {errors.length > 0 && (
          <section
            role="alert"
            className="mt-8 rounded-md border border-red-200 bg-red-50 p-4 text-sm text-red-900"
            data-testid="lab-errors"
          >
            <h2 className="font-semibold">{t("brokenHeading")}</h2>
            <ul className="mt-2 space-y-2">
              {errors.map((error, i) => (
                <li key={error.slug ?? i}>
                  <pre className="font-mono text-xs whitespace-pre-wrap">{error.message}</pre>
                </li>
              ))}
            </ul>
          </section>
        )}
      </div>
    </div>
  );
}

/** The lab catalog (and its broken labs), the user's live sessions newest first, their cohorts still running, and each live session's step count. */
async function homeData(userId: string) {
  const db = getServicesOrThrow().db;
  const [{ labs, errors }, live, cohorts] = await Promise.all([
    listLabs(labsDirFromEnv()),
    db.labSession.findMany({
      where: { learnerId: userId, state: { in: [...LIVE_STATES] } },
      orderBy: { createdAt: "desc" },
      select: {
        id: true,
        labSlug: true,
        labVersion: true,
        createdAt: true,
        completedAt: true,
        state: true,
        expiresAt: true,
        _count: { select: { completions: true } },
      },
    }),
    db.cohortMember.findMany({
      where: { userId, cohort: { endedAt: null } },
      select: { role: true, cohort: { select: { id: true, name: true, labs: true, startsAt: true, endsAt: true } } },
      orderBy: { cohort: { createdAt: "desc" } },
    }),
  ]);
  // Steps of each live session's own lab version (it may run an older one than the files on disk).
  const stepCounts = new Map(
    await Promise.all(
      live.map(
        async (s) => [s.id, s.labVersion ? (await storedLabVersion(db, s.labSlug, s.labVersion))?.steps.length : undefined] as const,
      ),
    ),
  );
  return { labs, errors, live, cohorts, stepCounts };
}

type HomeData = Awaited<ReturnType<typeof homeData>>;

/** The user's live sessions, each with its progress and time left, to resume. */
function LiveSessions(props: {
  live: HomeData["live"];
  titles: ReadonlyMap<string, Lab>;
  stepCounts: HomeData["stepCounts"];
  now: Date;
  t: HomeTranslator;
  format: Formatter;
}) {
  const { live, titles, stepCounts, now, t, format } = props;
  return (
    <section data-testid="live-sessions">
      <h2 className="text-lg font-semibold">{t("live")}</h2>
      {live.length === 0 ? (
        <p className="mt-1 text-sm text-slate-500">{t("liveEmpty")}</p>
      ) : (
        <ul className="mt-2 space-y-2">
          {live.map((s) => {
            const lab = titles.get(s.labSlug);
            return (
              <li
                key={s.id}
                data-session-id={s.id}
                className="flex flex-wrap items-center gap-3 rounded border border-slate-200 bg-white px-4 py-2 text-sm"
              >
                <span className="font-medium">{lab?.manifest.title ?? s.labSlug}</span>
                <span className="text-xs text-slate-500" data-testid="session-started">
                  {t("startedAt", { date: format.dateTime(s.createdAt, "dateTime") })}
                </span>
                <span className="text-xs text-slate-500">
                  {s.completedAt
                    ? t("completed")
                    : t("progress", { done: s._count.completions, total: stepCounts.get(s.id) ?? lab?.steps.length ?? 0 })}
                </span>
                {s.state === "suspended" && (
                  <span className="rounded bg-amber-100 px-1.5 py-0.5 text-xs text-amber-900" data-testid="session-suspended">
                    {t("suspended")}
                  </span>
                )}
                {s.expiresAt && (
                  <span className="text-xs text-slate-500" data-testid="time-remaining">
                    {t("timeLeft", { left: format.relativeTime(s.expiresAt, now), at: format.dateTime(s.expiresAt, "time") })}
                  </span>
                )}
                <Link href={`/labs/${s.labSlug}`} className="ml-auto text-sky-700 hover:underline">
                  {t("resume")}
                </Link>
              </li>
            );
          })}
        </ul>
      )}
    </section>
  );
}

/** The user's running cohorts: their dates, their labs, and the dashboard for an instructor. */
function MyCohorts(props: { cohorts: HomeData["cohorts"]; titles: ReadonlyMap<string, Lab>; t: HomeTranslator; format: Formatter }) {
  const { cohorts, titles, t, format } = props;
  return (
    <section className="mt-8" data-testid="my-cohorts">
      <h2 className="text-lg font-semibold">{t("myCohorts")}</h2>
      <ul className="mt-2 space-y-2">
        {cohorts.map(({ role, cohort }) => (
          <li key={cohort.id} className="rounded border border-slate-200 bg-white px-4 py-2 text-sm">
            <span className="font-medium">{cohort.name}</span>
            {role === "instructor" && (
              <Link href={`/cohorts/${cohort.id}`} className="ml-3 text-sky-700 hover:underline">
                {t("dashboard")}
              </Link>
            )}
            {(cohort.startsAt || cohort.endsAt) && (
              <span className="ml-3 text-xs text-slate-500">
                {cohort.startsAt ? format.dateTime(cohort.startsAt, "date") : ""} –{" "}
                {cohort.endsAt ? format.dateTime(cohort.endsAt, "date") : ""}
              </span>
            )}
            <span className="mt-1 flex flex-wrap gap-2 text-xs">
              {cohort.labs.map((slug) => (
                <Link key={slug} href={`/labs/${slug}`} className="rounded bg-slate-100 px-1.5 py-0.5 text-slate-700 hover:bg-sky-100">
                  {titles.get(slug)?.manifest.title ?? slug}
                </Link>
              ))}
            </span>
          </li>
        ))}
      </ul>
    </section>
  );
}

function LabCard({ lab, resume, t }: { lab: Lab; resume: boolean; t: HomeTranslator }) {
  const { manifest } = lab;
  return (
    <Link
      href={`/labs/${lab.slug}`}
      data-lab={lab.slug}
      className="block h-full rounded-lg border border-slate-200 bg-white p-5 shadow-sm transition hover:border-sky-400 hover:shadow-md"
    >
      <h2 className="text-lg font-semibold text-slate-900">
        {manifest.mode === "exam" && (
          <span
            data-testid="exam-badge"
            className="mr-2 rounded bg-amber-100 px-1.5 py-0.5 align-middle text-xs font-semibold text-amber-800"
          >
            {t("exam")}
          </span>
        )}
        {manifest.title}
      </h2>
      <p className="mt-2 text-sm leading-relaxed text-slate-700">{manifest.summary}</p>
      <dl className="mt-4 flex flex-wrap items-center gap-x-4 gap-y-1 text-xs text-slate-500">
        <div>
          <dt className="sr-only">{t("duration")}</dt>
          <dd>{t("minutes", { n: manifest.durationMinutes })}</dd>
        </div>
        <div className="flex items-center gap-1">
          <dt>{t("machines")}:</dt>
          {manifest.machines.map((m) => (
            <dd key={m} className="rounded bg-slate-100 px-1.5 py-0.5 font-mono text-slate-700">
              {m}
            </dd>
          ))}
        </div>
        <div className="ml-auto font-semibold text-sky-700" data-testid="lab-action">
          {resume ? t("resume") : t("start")}
        </div>
      </dl>
    </Link>
  );
}
