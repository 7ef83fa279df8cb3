"use client";
/**
 * Tells the learner, visibly, when an instructor or admin is watching their terminals: the
 * session's event stream sends `watchers` (names) on connect and on every change.
 */
import { useTranslations } from "next-intl";
import { useEffect, useState } from "react";
import { sessionTokens } from "@/components/terminal/session-tokens";

export function WatchNotice({ slug }: { slug: string }) {
  const t = useTranslations("watching");
  const [watchers, setWatchers] = useState<string[]>([]);
  useEffect(() => {
    let source: EventSource | undefined;
    let disposed = false;
    void sessionTokens(slug).then(
      ({ sessionId }) => {
        if (disposed) return;
        source = new EventSource(`/api/sessions/${encodeURIComponent(sessionId)}/events`);
        source.addEventListener("watchers", (event) => {
          try {
            const parsed = JSON.parse((event as MessageEvent<string>).data) as { watchers?: unknown };
            setWatchers(Array.isArray(parsed.watchers) ? parsed.watchers.filter((w): w is string => typeof w === "string") : []);
          } catch {
            // a malformed event changes nothing
          }
        });
      },
      () => undefined, // the terminals show why the session could not be opened
    );
    return () => {
      disposed = true;
      source?.close();
    };
  }, [slug]);
  if (watchers.length === 0) return null;
  return (
    <div
      role="status"
      data-testid="watch-notice"
      className="flex items-center gap-2 rounded bg-amber-100 px-2 py-0.5 text-xs font-semibold text-amber-900"
    >
      <span aria-hidden>👁</span>
      {t("notice", { names: watchers.join(", ") })}
    </div>
  );
}
