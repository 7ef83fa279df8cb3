"use client";
/**
 * What the learner sees over the terminals while their lab starts: the stage (queued
 * with their place, machines, the setup script that runs, saving), how long it has taken, and a
 * failure with a button to start again (never by itself). Gone once the session is ready; the
 * terminals then show their own connection state.
 */
import { useLocale, useTranslations } from "next-intl";
import { formatDuration } from "@/server/i18n/duration";
import { retryStart, useStartState } from "@/components/terminal/session-tokens";

export function StartProgress({ slug }: { slug: string }) {
  const t = useTranslations("labStart");
  const locale = useLocale();
  const state = useStartState(slug);
  if (!state || state.phase === "ready") return null;
  const view = state.phase === "starting" ? state.view : undefined;
  const stage = view?.stage ?? "machines";
  return (
    <div
      className="absolute inset-0 z-10 flex items-center justify-center bg-[#0b1020]/90 p-6"
      data-testid="start-progress"
      data-phase={state.phase}
      data-stage={state.phase === "starting" ? stage : undefined}
      role="status"
      aria-live="polite"
    >
      <div className="w-full max-w-md rounded-lg border border-slate-700 bg-slate-900 p-5 text-slate-100 shadow-xl">
        {state.phase === "failed" ? (
          <>
            <h2 className="text-base font-semibold text-red-300">{t("failed")}</h2>
            {state.message && <p className="mt-2 whitespace-pre-wrap break-words font-mono text-xs text-slate-300">{state.message}</p>}
            <button
              type="button"
              data-testid="start-retry"
              onClick={() => retryStart(slug)}
              className="mt-4 rounded bg-sky-600 px-3 py-1.5 text-sm font-medium text-white hover:bg-sky-500"
            >
              {t("retry")}
            </button>
          </>
        ) : (
          <>
            <h2 className="text-base font-semibold">{t("title")}</h2>
            <ol className="mt-3 space-y-1 text-sm">
              {(["queued", "machines", "setup", "saving"] as const)
                .filter((s) => s !== "queued" || stage === "queued")
                .map((s) => (
                  <li
                    key={s}
                    className={s === stage ? "font-semibold text-sky-300" : "text-slate-400"}
                    data-current={s === stage || undefined}
                  >
                    {s === stage ? "▶ " : "・"}
                    {t(`stage.${s}`)}
                  </li>
                ))}
            </ol>
            {stage === "queued" && view?.position != null && (
              <p className="mt-3 text-sm" data-testid="queue-position">
                {t("position", { position: view.position })}
              </p>
            )}
            {stage === "queued" && (
              <p className="mt-1 text-xs text-slate-400">{view?.detail === "labCap" ? t("labCap") : t("queuedWhy")}</p>
            )}
            {stage === "setup" && view?.detail && (
              <p className="mt-2 font-mono text-xs text-slate-300">{t("detail", { detail: view.detail })}</p>
            )}
            {view?.source && stage !== "queued" && <p className="mt-2 text-xs text-slate-400">{t(`source.${view.source}`)}</p>}
            {view && <p className="mt-2 text-xs text-slate-500">{t("elapsed", { time: formatDuration(view.elapsedSeconds, locale) })}</p>}
            <p className="mt-3 text-xs text-slate-400">{t("readLesson")}</p>
          </>
        )}
      </div>
    </div>
  );
}
