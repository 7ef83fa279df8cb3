"use client";
/**
 * The live dashboard: learners × steps (done / current with time on it / not reached), the newest
 * failing check's output, stuck-longest first; the funnel and the time-on-step heatmap; a learner's
 * timeline of check runs; "watch" opens their terminals read-only. Live: the cohort's event stream
 * says which session changed and the page re-fetches the dashboard (debounced); time on step
 * ticks locally every second.
 */
import { useFormatter, useLocale, useTranslations } from "next-intl";
import Link from "next/link";
import { useRouter } from "next/navigation";
import { Fragment, useCallback, useEffect, useRef, useState } from "react";
import { callApi } from "@/components/cohorts/api";
import { revokedReason } from "@/components/lab/useProgress";
import type { Dashboard, DashboardLearner, TimelineEntry } from "@/server/cohorts/dashboard";
import { formatDuration } from "@/server/i18n/duration";
import { Funnel, Heatmap } from "./charts";

/** Several changes in a burst (a class passing a step together) cause one re-fetch, after this many ms. */
const REFETCH_DEBOUNCE_MS = 300;
/** Wait before re-opening the event stream after the server refused it, in ms. */
const STREAM_RETRY_MS = 3_000;

export function CohortDashboard(props: {
  cohortId: string;
  labs: { slug: string; title: string }[];
  initial: Dashboard;
  isAdmin?: boolean;
}) {
  const { cohortId, labs } = props;
  const t = useTranslations("dashboard");
  const { data, refetch, selectLab } = useDashboard(cohortId, props.initial);
  const { live, revoked } = useCohortEvents(cohortId, refetch);
  const now = useNow(props.initial.at);
  /** The learner whose timeline is open. */
  const [open, setOpen] = useState<string | null>(null);

  return (
    <div data-testid="dashboard" data-live={live ? "true" : "false"}>
      {revoked && (
        <p role="alert" data-testid="dashboard-revoked" className="mt-3 rounded bg-amber-100 px-3 py-2 text-sm text-amber-900">
          {revoked}
        </p>
      )}
      <DashboardBar labs={labs} lab={data.labSlug} live={live} onLab={selectLab} />

      {labs.length === 0 ? (
        <p className="mt-6 text-sm text-slate-500">{t("noLabs")}</p>
      ) : data.learners.length === 0 ? (
        <p className="mt-6 text-sm text-slate-500">{t("noLearners")}</p>
      ) : (
        <LearnerGrid
          data={data}
          now={now}
          cohortId={cohortId}
          isAdmin={props.isAdmin === true}
          open={open}
          onOpen={setOpen}
          onMoved={() => void refetch()}
        />
      )}

      {data.steps.length > 0 && data.learners.length > 0 && (
        <div className="mt-8 grid items-start gap-6 lg:grid-cols-2">
          <section className="rounded-lg border border-slate-200 bg-white p-4" data-testid="funnel">
            <h2 className="text-sm font-semibold">{t("funnel")}</h2>
            <Funnel steps={data.steps} counts={data.funnel} total={data.learners.length} />
          </section>
          <section className="rounded-lg border border-slate-200 bg-white p-4" data-testid="heatmap">
            <h2 className="text-sm font-semibold">{t("heatmap")}</h2>
            <Heatmap steps={data.steps} learners={data.learners} now={now} />
          </section>
        </div>
      )}
    </div>
  );
}

/** The dashboard of the chosen lab: re-fetched on demand; choosing another lab puts it in the URL and fetches its dashboard. */
function useDashboard(cohortId: string, initial: Dashboard) {
  const router = useRouter();
  const [data, setData] = useState<Dashboard>(initial);
  const labRef = useRef(data.labSlug);
  labRef.current = data.labSlug;

  const refetch = useCallback(async () => {
    const q = labRef.current ? `?lab=${encodeURIComponent(labRef.current)}` : "";
    const res = await callApi<Dashboard>(`/api/cohorts/${cohortId}/dashboard${q}`);
    if (res.ok && res.body) setData(res.body);
  }, [cohortId]);

  function selectLab(slug: string) {
    labRef.current = slug;
    router.replace(`/cohorts/${cohortId}?lab=${encodeURIComponent(slug)}`);
    void refetch();
  }

  return { data, refetch, selectLab };
}

/**
 * The cohort's event stream: each change (and the hello, for what changed while not listening)
 * re-fetches, debounced; reopened after the server refused it, unless access ended (`revoked`,
 * worded in the page's language).
 */
function useCohortEvents(cohortId: string, refetch: () => Promise<void>) {
  const tr = useTranslations("revoked");
  const [live, setLive] = useState(false);
  const [revoked, setRevoked] = useState<string | null>(null);

  useEffect(() => {
    let disposed = false;
    let source: EventSource | undefined;
    let debounce: ReturnType<typeof setTimeout> | undefined;
    let retry: ReturnType<typeof setTimeout> | undefined;
    const schedule = () => {
      clearTimeout(debounce);
      debounce = setTimeout(() => void refetch(), REFETCH_DEBOUNCE_MS);
    };
    const openStream = () => {
      const stream = (source = new EventSource(`/api/cohorts/${cohortId}/events`));
      stream.addEventListener("hello", () => {
        setLive(true);
        schedule(); // whatever changed while we were not listening
      });
      stream.addEventListener("changed", schedule);
      // Access ended while open (signed out, removed, cohort ended): stop, say why, no retries.
      stream.addEventListener("revoked", (event) => {
        stream.close();
        disposed = true;
        setLive(false);
        setRevoked(tr(revokedReason((event as MessageEvent<string>).data)));
      });
      stream.onerror = () => {
        setLive(false);
        if (stream.readyState === EventSource.CLOSED && !disposed) retry = setTimeout(openStream, STREAM_RETRY_MS);
      };
    };
    openStream();
    return () => {
      disposed = true;
      source?.close();
      clearTimeout(debounce);
      clearTimeout(retry);
    };
  }, [cohortId, refetch, tr]);

  return { live, revoked };
}

/** The time now in ms, ticking every second (time on step counts up without a re-fetch); `initialAt` (ISO) at first. */
function useNow(initialAt: string): number {
  const [now, setNow] = useState(() => Date.parse(initialAt));
  useEffect(() => {
    const timer = setInterval(() => setNow(Date.now()), 1_000);
    return () => clearInterval(timer);
  }, []);
  return now;
}

/** The lab to show, whether the page is live, and the cells' legend. */
function DashboardBar({
  labs,
  lab,
  live,
  onLab,
}: {
  labs: { slug: string; title: string }[];
  lab: string | null;
  live: boolean;
  onLab(slug: string): void;
}) {
  const t = useTranslations("dashboard");
  return (
    <div className="mt-3 flex flex-wrap items-center gap-4 text-sm">
      {labs.length > 0 && (
        <label className="flex items-center gap-2">
          {t("lab")}
          <select value={lab ?? ""} onChange={(e) => onLab(e.target.value)} className="rounded border border-slate-300 px-2 py-1">
            {labs.map((l) => (
              <option key={l.slug} value={l.slug}>
                {l.title}
              </option>
            ))}
          </select>
        </label>
      )}
      <span
        className={`inline-flex items-center gap-1.5 text-xs ${live ? "text-emerald-700" : "text-amber-700"}`}
        data-testid="dashboard-live"
      >
        <span className={`h-2 w-2 rounded-full ${live ? "bg-emerald-500" : "bg-amber-500"}`} />
        {live ? t("live") : t("reconnecting")}
      </span>
      <span className="text-xs text-slate-500">{t("stuckFirst")}</span>
      <span className="ml-auto flex items-center gap-3 text-xs text-slate-600">
        <Legend className="bg-emerald-500" label={t("legend.done")} />
        <Legend className="bg-amber-400" label={t("legend.current")} />
        <Legend className="bg-emerald-100 ring-1 ring-emerald-500 ring-inset" label={t("legend.proving")} />
        <Legend className="bg-slate-200" label={t("legend.locked")} />
      </span>
    </div>
  );
}

/** Learners × steps, stuck-longest first (the server's order); a learner's timeline opens under their row. */
function LearnerGrid(props: {
  data: Dashboard;
  now: number;
  cohortId: string;
  isAdmin: boolean;
  /** The learner whose timeline is open. */
  open: string | null;
  onOpen(userId: string | null): void;
  onMoved(): void;
}) {
  const { data, now, cohortId, open } = props;
  const t = useTranslations("dashboard");
  return (
    <table className="mt-4 w-full border-separate border-spacing-y-1 text-left text-sm" data-testid="learner-grid">
      <thead className="text-xs text-slate-500">
        <tr>
          <th className="py-1">{t("learner")}</th>
          {data.steps.map((s, i) => (
            <th key={s.id} className="px-0.5 text-center font-normal" title={s.title}>
              {i + 1}
            </th>
          ))}
          <th className="pl-3">{t("lastFailure")}</th>
          <th />
        </tr>
      </thead>
      <tbody>
        {data.learners.map((l) => (
          <Fragment key={l.userId}>
            <LearnerRow
              learner={l}
              steps={data.steps}
              now={now}
              cohortId={cohortId}
              isAdmin={props.isAdmin}
              onMoved={props.onMoved}
              onTimeline={() => props.onOpen(open === l.userId ? null : l.userId)}
            />
            {open === l.userId && l.sessionId && (
              <tr>
                <td colSpan={data.steps.length + 3}>
                  <Timeline sessionId={l.sessionId} steps={data.steps} version={l.lastFailure?.at ?? String(l.stepsDone)} />
                </td>
              </tr>
            )}
          </Fragment>
        ))}
      </tbody>
    </table>
  );
}

function Legend({ className, label }: { className: string; label: string }) {
  return (
    <span className="inline-flex items-center gap-1">
      <span className={`inline-block h-3 w-3 rounded-sm ${className}`} />
      {label}
    </span>
  );
}

function LearnerRow(props: {
  learner: DashboardLearner;
  steps: Dashboard["steps"];
  now: number;
  cohortId: string;
  isAdmin: boolean;
  onMoved(): void;
  onTimeline(): void;
}) {
  const { learner: l, steps, now, cohortId } = props;
  const t = useTranslations("dashboard");
  const locale = useLocale();
  const onStep = l.currentSince && l.state !== "ended" ? Math.max(0, Math.round((now - Date.parse(l.currentSince)) / 1000)) : null;
  return (
    <tr
      className="bg-white"
      data-learner={l.email}
      data-steps-done={l.stepsDone}
      data-current-step={l.currentStepId ?? ""}
      data-awaiting-reboot={l.awaitingReboot}
    >
      <td className="rounded-l border-y border-l border-slate-200 px-2 py-1.5">
        <div className="font-medium">{l.name}</div>
        <div className="text-xs text-slate-500">
          {l.state === "none"
            ? t("notStarted")
            : l.completed
              ? t("completed")
              : l.state === "ended"
                ? t("ended")
                : l.awaitingReboot
                  ? t("awaitingReboot")
                  : onStep !== null
                    ? t("onStep", { time: formatDuration(onStep, locale) })
                    : ""}
        </div>
        {l.outdated && l.sessionId && <OutdatedVersion sessionId={l.sessionId} isAdmin={props.isAdmin} onMoved={props.onMoved} />}
      </td>
      {steps.map((s) => {
        const state = l.doneStepIds.includes(s.id)
          ? "done"
          : s.id === l.currentStepId
            ? l.awaitingReboot
              ? "proving"
              : "current"
            : "locked";
        return (
          <td key={s.id} className="border-y border-slate-200 px-0.5 text-center" data-step={s.id} data-state={state}>
            <span
              title={`${s.title}: ${t(`legend.${state}`)}`}
              className={`inline-block h-6 min-w-8 rounded px-1 text-[10px] leading-6 ${state === "done" ? "bg-emerald-500 text-white" : state === "proving" ? "bg-emerald-100 text-emerald-900 ring-1 ring-emerald-500 ring-inset" : state === "current" ? "bg-amber-400 text-amber-950" : "bg-slate-200"}`}
            >
              {state === "proving" ? "↻" : state === "current" && onStep !== null ? formatDuration(onStep, locale) : ""}
            </span>
          </td>
        );
      })}
      <td className="max-w-md border-y border-slate-200 pl-3 align-top">
        {l.lastFailure && (
          <pre className="max-h-16 overflow-hidden font-mono text-xs whitespace-pre-wrap text-red-800" data-testid="last-failure">
            {l.lastFailure.output}
          </pre>
        )}
      </td>
      <td className="rounded-r border-y border-r border-slate-200 px-2 text-right text-xs whitespace-nowrap">
        {l.sessionId && (
          <>
            <button type="button" onClick={props.onTimeline} className="mr-3 text-sky-700 hover:underline">
              {t("timeline")}
            </button>
            {/* A document load, not a client-side navigation: the replay page's CSP allows the player's WebAssembly, this page's does not. */}
            <a href={`/replay/${l.sessionId}`} className="mr-3 text-sky-700 hover:underline" data-testid="replay">
              {t("replay")}
            </a>
            {l.state !== "ended" && (
              <Link
                href={`/cohorts/${cohortId}/watch/${l.sessionId}`}
                className="font-semibold text-sky-700 hover:underline"
                data-testid="watch"
              >
                {t("watch")}
              </Link>
            )}
          </>
        )}
      </td>
    </tr>
  );
}

/**
 * The session runs an older version of the lab than the columns (a lab edit applies to new
 * sessions); an admin may move it to the current version (passed steps that still exist stay passed).
 */
function OutdatedVersion({ sessionId, isAdmin, onMoved }: { sessionId: string; isAdmin: boolean; onMoved(): void }) {
  const t = useTranslations("dashboard");
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  async function move() {
    setBusy(true);
    const res = await callApi(`/api/sessions/${sessionId}/lab-version`, { method: "POST" });
    setBusy(false);
    setError(res.ok ? null : t("moveFailed", { error: res.error ?? String(res.status) }));
    if (res.ok) onMoved();
  }
  return (
    <div className="mt-0.5 flex flex-wrap items-center gap-2 text-xs" data-testid="outdated-version">
      <span className="rounded bg-slate-200 px-1.5 py-0.5 text-slate-700">{t("olderVersion")}</span>
      {isAdmin && (
        <button
          type="button"
          onClick={() => void move()}
          disabled={busy}
          className="text-sky-700 hover:underline disabled:opacity-50"
          data-testid="move-version"
        >
          {busy ? t("moving") : t("moveToCurrent")}
        </button>
      )}
      {error && (
        <span role="alert" className="text-red-700">
          {error}
        </span>
      )}
    </div>
  );
}

/** A learner's check history, oldest first: one line per change of result, with how many runs in a row gave it. */
export function Timeline({ sessionId, steps, version }: { sessionId: string; steps: Dashboard["steps"]; version: string }) {
  const t = useTranslations("dashboard");
  const outcomes = useTranslations("steps.outcome");
  const format = useFormatter();
  const [runs, setRuns] = useState<TimelineEntry[] | null>(null);
  useEffect(() => {
    void callApi<{ runs: TimelineEntry[] }>(`/api/sessions/${sessionId}/timeline`).then(
      (res) => res.ok && res.body && setRuns(res.body.runs),
    );
  }, [sessionId, version]);
  const index = new Map(steps.map((s, i) => [s.id, i + 1]));
  if (!runs) return null;
  return (
    <div className="rounded border border-slate-200 bg-slate-50 p-3" data-testid="timeline">
      <h3 className="text-xs font-semibold text-slate-600">{t("timelineTitle")}</h3>
      {runs.length === 0 ? (
        <p className="text-xs text-slate-500">{t("noRuns")}</p>
      ) : (
        <ol className="mt-2 max-h-64 space-y-1 overflow-y-auto text-xs">
          {runs.map((r, i) => (
            <li key={i} className="flex gap-3" data-outcome={r.outcome}>
              <time className="w-20 shrink-0 text-slate-500" dateTime={r.at} data-testid="timeline-time">
                {format.dateTime(new Date(r.at), "timeSeconds")}
              </time>
              <span className={`w-2 shrink-0 rounded-full ${r.outcome === "pass" ? "bg-emerald-500" : "bg-red-500"}`} />
              <span className="w-16 shrink-0">#{index.get(r.stepId) ?? "?"}</span>
              <span className="w-24 shrink-0">{outcomes(r.outcome as "pass")}</span>
              <span className="w-24 shrink-0 text-slate-500">{t(`trigger.${r.trigger as "poll"}`)}</span>
              <span className="w-16 shrink-0 text-slate-500" data-testid="timeline-count">
                {r.count > 1 ? t("runCount", { count: r.count }) : ""}
              </span>
              <span className="truncate font-mono text-slate-700">{r.output}</span>
            </li>
          ))}
        </ol>
      )}
    </div>
  );
}
