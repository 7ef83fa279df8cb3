"use client";
/**
 * Tells the learner that the session's terminals are recorded, with a link to replay them
 * (as WatchNotice tells them who is watching).
 */
import { useTranslations } from "next-intl";
import { useEffect, useState } from "react";
import { sessionTokens } from "@/components/terminal/session-tokens";

export function RecordingNotice({ slug }: { slug: string }) {
  const t = useTranslations("recording");
  const [sessionId, setSessionId] = useState<string | null>(null);
  useEffect(() => {
    let disposed = false;
    void sessionTokens(slug).then(
      (tokens) => !disposed && setSessionId(tokens.sessionId),
      () => undefined, // the terminals show why the session could not be opened
    );
    return () => {
      disposed = true;
    };
  }, [slug]);
  if (!sessionId) return null;
  return (
    <div data-testid="recording-notice" className="flex items-center gap-2 text-xs text-slate-600" title={t("notice")}>
      <span aria-hidden className="inline-block h-2 w-2 rounded-full bg-red-500" />
      <span className="hidden lg:inline">{t("notice")}</span>
      {/* A new document: the replay page's CSP allows the player's WebAssembly, this page's does not. */}
      <a href={`/replay/${sessionId}`} target="_blank" rel="noopener" className="font-semibold text-sky-700 hover:underline">
        {t("replay")}
      </a>
    </div>
  );
}
