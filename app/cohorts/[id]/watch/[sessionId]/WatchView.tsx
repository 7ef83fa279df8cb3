"use client";
/**
 * The learner's terminals side by side, read-only (tokens from GET …/terminal-tokens, mode read),
 * and their check timeline. The learner's extra shells (`node01 #2`) are panes too; the session's
 * event stream says when they open or close (`tabs`).
 */
import { useTranslations } from "next-intl";
import Link from "next/link";
import { useCallback, useEffect, useRef, useState } from "react";
import { Terminal } from "@/components/terminal/Terminal";
import { terminalName, type TabView } from "@/server/terminal/tab-names";
import { Timeline } from "../../CohortDashboard";

/** The `tabs` event's list; anything malformed reads as none. */
function parseTabs(data: string): TabView[] {
  try {
    const tabs = (JSON.parse(data) as { tabs?: unknown }).tabs;
    if (!Array.isArray(tabs)) return [];
    return tabs.filter((t): t is TabView => typeof t?.machine === "string" && Number.isInteger(t?.number) && t.number > 1);
  } catch {
    return [];
  }
}

export function WatchView(props: {
  cohortId: string;
  sessionId: string;
  slug: string;
  machines: string[];
  title: string;
  steps: { id: string; title: string }[];
}) {
  const { cohortId, sessionId, slug, machines } = props;
  const t = useTranslations("dashboard");
  const tl = useTranslations("lab");
  const inFlight = useRef<Promise<Map<string, string>> | null>(null);
  const [tabs, setTabs] = useState<TabView[]>([]);
  useEffect(() => {
    const source = new EventSource(`/api/sessions/${encodeURIComponent(sessionId)}/events`);
    source.addEventListener("tabs", (event) => {
      const next = parseTabs((event as MessageEvent<string>).data);
      // A new tab's token is not in the last answer: the next token request asks again.
      inFlight.current = null;
      setTabs(next);
    });
    return () => source.close();
  }, [sessionId]);
  const panes = machines.flatMap((machine) => [
    { machine, number: 1 },
    ...tabs.filter((t) => t.machine === machine).sort((a, b) => a.number - b.number),
  ]);
  const tokens = useCallback(
    (fresh: boolean) => {
      if (!inFlight.current || fresh) {
        inFlight.current = fetch(`/api/sessions/${sessionId}/terminal-tokens`).then(async (res) => {
          const body = (await res.json().catch(() => null)) as {
            machines?: { name: string; token: string }[];
            tabs?: { machine: string; number: number; token: string }[];
            error?: string;
          } | null;
          if (!res.ok || !body?.machines) {
            inFlight.current = null;
            throw new Error(body?.error ?? `HTTP ${res.status}`);
          }
          return new Map([
            ...body.machines.map((m) => [m.name, m.token] as const),
            ...(body.tabs ?? []).map((t) => [terminalName(t.machine, t.number), t.token] as const),
          ]);
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
        {panes.map(({ machine, number }) => (
          <div
            key={terminalName(machine, number)}
            className="flex min-h-64 flex-col bg-[#0b1020]"
            data-testid={`watch-pane-${terminalName(machine, number)}`}
          >
            <div className="flex items-center px-2 py-1 font-mono text-xs text-slate-300">
              {number === 1 ? machine : tl("tabName", { machine, number })}
              {number === 1 && (
                <button
                  type="button"
                  className="ml-auto rounded px-1 text-slate-400 hover:bg-slate-700 hover:text-slate-100"
                  title={tl("previewTitle", { machine })}
                  onClick={() => {
                    const port = Number(window.prompt(tl("previewPrompt", { machine }), "80")?.trim());
                    if (!Number.isInteger(port) || port < 1 || port > 65535) return;
                    const query = new URLSearchParams({ machine, port: String(port), path: "/" });
                    window.open(`/api/sessions/${encodeURIComponent(sessionId)}/preview?${query}`, "_blank", "noopener");
                  }}
                >
                  {tl("preview")}
                </button>
              )}
            </div>
            <div className="min-h-0 flex-1">
              <Terminal slug={slug} machine={machine} number={number} active tokenSource={tokens} readOnly />
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
