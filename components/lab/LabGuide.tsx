"use client";
/**
 * The left side of a lab that has steps, one column as a learner reads it: the lesson (the
 * introduction) first, the steps after it, and the Check button always in view at the bottom
 * (StepPanel). The lesson folds away behind its heading; it starts folded for a learner coming
 * back to a lab they have already worked on, so they land on their current step.
 */
import { useTranslations } from "next-intl";
import { useRouter } from "next/navigation";
import { useEffect, useId, useRef, useState } from "react";
import { Lesson } from "@/components/lesson/Lesson";
import { sessionErrorText, sessionTokens } from "@/components/terminal/session-tokens";
import { StepPanel, type StepText } from "./StepPanel";
import { useProgress } from "./useProgress";

/** Wait before asking for the lab session again after it could not start, in ms. */
const SESSION_RETRY_MS = 5_000;

export function LabGuide(props: { slug: string; version: string; lessonMarkdown: string; steps: readonly StepText[] }) {
  const { slug, version, lessonMarkdown, steps } = props;
  const t = useTranslations("lab");
  const { sessionId, sessionError } = useSessionId(slug);
  const feed = useProgress(sessionId);
  const { progress } = feed;
  const [lessonOpen, setLessonOpen] = useState(true);
  const lessonId = useId();
  useVersionFollow(version, progress?.labVersion);

  // Once, on the first progress, unless the learner has already folded or unfolded the lesson.
  // Not on lastCheck: the grader's background checks set it before the learner has done anything.
  const placed = useRef(false);
  useEffect(() => {
    if (placed.current || progress === undefined) return;
    placed.current = true;
    if (progress.completed || progress.steps.some((s) => s.state === "done") || progress.hintsRevealed.length > 0) {
      setLessonOpen(false);
    }
  }, [progress]);

  function toggleLesson() {
    placed.current = true;
    setLessonOpen((open) => !open);
  }

  return (
    <div className="h-full" data-testid="lab-guide">
      <StepPanel sessionId={sessionId} steps={steps} feed={feed} sessionError={sessionError}>
        <section data-testid="lesson-section" data-open={lessonOpen} className="border-b border-slate-200">
          <button
            type="button"
            onClick={toggleLesson}
            aria-expanded={lessonOpen}
            aria-controls={lessonId}
            className="flex w-full items-center gap-2 px-6 py-2.5 text-left text-sm font-semibold text-slate-600 hover:bg-slate-50 focus-visible:outline-2 focus-visible:-outline-offset-2 focus-visible:outline-sky-500"
          >
            <span aria-hidden="true" className={`text-slate-400 transition ${lessonOpen ? "rotate-90" : ""}`}>
              ▸
            </span>
            {t("lesson")}
            <span className="ml-auto text-xs font-normal text-slate-400">{lessonOpen ? t("hide") : t("show")}</span>
          </button>
          <div id={lessonId} hidden={!lessonOpen}>
            <Lesson markdown={lessonMarkdown} />
          </div>
        </section>
      </StepPanel>
    </div>
  );
}

/**
 * The page's steps are of one lab version; the session may run another (it started after the lab
 * changed, or an admin moved it): then the page is rendered again from the server, once per version.
 */
function useVersionFollow(pageVersion: string, sessionVersion: string | undefined): void {
  const router = useRouter();
  const followed = useRef<string>(undefined);
  useEffect(() => {
    if (sessionVersion === undefined || sessionVersion === pageVersion || followed.current === sessionVersion) return;
    followed.current = sessionVersion;
    router.refresh();
  }, [pageVersion, sessionVersion, router]);
}

/**
 * The lab session's id, from the same start-or-resume request the terminals make (sessionTokens
 * shares it). Retried while the session cannot start; the error is kept to show meanwhile. Also
 * the exam's (components/exam/ExamWorkspace.tsx).
 */
export function useSessionId(slug: string): { sessionId: string | undefined; sessionError: string | undefined } {
  const t = useTranslations("terminal");
  const tRef = useRef(t);
  tRef.current = t;
  const [sessionId, setSessionId] = useState<string>();
  const [sessionError, setSessionError] = useState<string>();
  useEffect(() => {
    let disposed = false;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const attempt = () => {
      sessionTokens(slug).then(
        (s) => {
          if (disposed) return;
          setSessionId(s.sessionId);
          setSessionError(undefined);
        },
        (err: unknown) => {
          if (disposed) return;
          setSessionError(sessionErrorText(err, tRef.current));
          timer = setTimeout(attempt, SESSION_RETRY_MS);
        },
      );
    };
    attempt();
    return () => {
      disposed = true;
      clearTimeout(timer);
    };
  }, [slug]);
  return { sessionId, sessionError };
}
