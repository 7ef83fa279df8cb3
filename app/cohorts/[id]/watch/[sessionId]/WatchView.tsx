"use client";
/** The learner's terminals side by side, read-only (tokens from GET …/terminal-tokens, mode read), and their check timeline. */
import { useTranslations } from "next-intl";
import Link from "next/link";
import { useCallback, useRef } from "react";
import { Terminal } from "@/components/terminal/Terminal";
import { Timeline } from "../../CohortDashboard";

export function WatchView(props: { cohortId: string; sessionId: string; slug: string; machines: string[]; title: string; steps: { id: string; title: string }[] }) {
  const { cohortId, sessionId, slug, machines } = props;
  const t = useTranslations("dashboard");
  const inFlight = useRef<Promise<Map<string, string>> | null>(null);
  const tokens = useCallback(
    (fresh: boolean) => {
      if (!inFlight.current || fresh) {
        inFlight.current = fetch(`/api/sessions/${sessionId}/terminal-tokens`).then(async (res) => {
          const body = (await res.json().catch(() => null)) as { machines?: { name: string; token: string }[]; error?: string } | null;
          if (!res.ok || !body?.machines) {
            inFlight.current = null;
            throw new Error(body?.error ?? `HTTP ${res.status}`);
          }
          return new Map(body.machines.map((m) => [m.name, m.token]));
        });
      }
      return inFlight.current;
    },
    [sessionId],
  );
  return (
    <div className="flex min-h-0 flex-1 flex-col" data-testid="watch-view" data-session={sessionId}>
      <div className="flex h-10 shrink-0 items-center gap-3 border-b border-slate-200 bg-white px-4">
        <Link href={`/cohorts/${cohortId}`} className="text-xs text-slate-500 hover:text-sky-700">
          ← {t("back")}
        </Link>
        <h1 className="truncate text-sm font-semibold">{props.title}</h1>
        <span className="ml-auto rounded bg-amber-100 px-2 py-0.5 text-xs text-amber-900" data-testid="read-only-notice">
          {t("watchNotice")}
        </span>
      </div>
      <div className="grid min-h-0 flex-1 grid-cols-1 gap-px bg-slate-700 lg:grid-cols-3">
        {machines.map((machine) => (
          <div key={machine} className="flex min-h-64 flex-col bg-[#0b1020]">
            <div className="px-2 py-1 font-mono text-xs text-slate-300">{machine}</div>
            <div className="min-h-0 flex-1">
              <Terminal slug={slug} machine={machine} active tokenSource={tokens} readOnly />
            </div>
          </div>
        ))}
      </div>
      <div className="max-h-64 shrink-0 overflow-y-auto border-t border-slate-200 bg-white p-3">
        <Timeline sessionId={sessionId} steps={props.steps} version="" />
      </div>
    </div>
  );
}
