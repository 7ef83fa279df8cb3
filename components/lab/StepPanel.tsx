"use client";
/**
 * The lab's steps: a list in which each step is locked, current or done; the current step's text
 * and hint; the last check's result and a Check button that stay at the bottom; a banner once
 * every step is done. Whatever comes before the steps (the lesson) scrolls with them. Progress
 * comes live from the grader (useProgress), so a step turns done as soon as a background check
 * passes, without a click or a reload.
 *
 * The feedback is progress.lastCheck: the server already leaves out the grader's failing
 * background runs (they are not news to the learner), so it is the learner's own last Check or
 * the newest pass.
 *
 * A verifyByReboot step whose check passed is "proving" (passed now): the panel says so and
 * offers to reboot its machine; it turns done when the check passes again after the reboot.
 *
 * Tests read `data-step-id` / `data-state` on each step and `data-outcome` on the feedback.
 */
import { useTranslations } from "next-intl";
import { useCallback, useEffect, useId, useRef, useState, type ReactNode, type RefObject } from "react";
import { LessonMarkdown } from "@/components/lesson/Lesson";
import type { CheckResult, Progress, StepState } from "@/server/grader/progress";
import { GraderApiError, graderErrorText, revealHint, runCheck } from "./grader-api";
import type { ProgressFeed } from "./useProgress";

/** What the page tells the browser about a step: never its check, hint or solution. */
export type StepText = {
  id: string;
  title: string;
  /** Machine the step's check runs on. */
  machine: string;
  textMarkdown: string;
};

/** A step's heading counts as in view when this much of it shows, in CSS pixels (about its height). */
const STEP_HEADING_PX = 64;
/** Room left above a step scrolled into view, in CSS pixels. */
const STEP_SCROLL_MARGIN_PX = 16;

type Props = {
  /** Undefined until the lab session has started. */
  sessionId: string | undefined;
  /** The lab's steps in order, from the page. */
  steps: readonly StepText[];
  /** The session's live progress (useProgress); the caller owns it because it also uses it (LabGuide folds the lesson). */
  feed: ProgressFeed;
  /** Why the lab session could not start, if it could not. */
  sessionError?: string;
  /** Shown above the steps, in the same scroll (the lab's lesson). */
  children?: ReactNode;
};

export function StepPanel({ sessionId, steps, feed, sessionError, children }: Props) {
  const { progress } = feed;
  const scrollRef = useRef<HTMLDivElement>(null);
  const showStep = useShowStep(scrollRef, progress?.currentStepId);
  const loadError = sessionError ?? (progress === undefined ? feed.error : undefined);
  return (
    <section data-testid="step-panel" className="flex h-full flex-col">
      <div ref={scrollRef} className="min-h-0 flex-1 overflow-y-auto">
        {children}
        <StepList sessionId={sessionId} steps={steps} progress={progress} loadError={loadError} />
      </div>
      <CheckBar sessionId={sessionId} steps={steps} feed={feed} onShowStep={showStep} />
    </section>
  );
}

/**
 * Scrolls the panel (only) so a step's heading shows, unless it already does; and brings the
 * current step into view when it changes (a step just passed). Not when progress first arrives:
 * a learner starting the lab reads the lesson above the steps first.
 */
function useShowStep(scrollRef: RefObject<HTMLDivElement | null>, currentId: string | null | undefined): (id: string) => void {
  const showStep = useCallback(
    (id: string) => {
      const box = scrollRef.current;
      const item = box?.querySelector<HTMLElement>(`li[data-step-id="${CSS.escape(id)}"]`);
      if (!box || !item) return;
      const top = item.getBoundingClientRect().top - box.getBoundingClientRect().top + box.scrollTop;
      const visible = top >= box.scrollTop && top + STEP_HEADING_PX <= box.scrollTop + box.clientHeight;
      if (!visible) box.scrollTo({ top: Math.max(0, top - STEP_SCROLL_MARGIN_PX), behavior: "smooth" });
    },
    [scrollRef],
  );

  const shownStepId = useRef<string | null | undefined>(undefined);
  useEffect(() => {
    const previous = shownStepId.current;
    shownStepId.current = currentId;
    if (currentId && previous !== undefined && previous !== currentId) showStep(currentId);
  }, [currentId, showStep]);

  return showStep;
}

/** The heading with the count done, the completion banner or the loading state, and the steps. */
function StepList(props: {
  sessionId: string | undefined;
  steps: readonly StepText[];
  progress: Progress | undefined;
  loadError: string | undefined;
}) {
  const { sessionId, steps, progress, loadError } = props;
  const t = useTranslations("steps");
  const [expanded, setExpanded] = useState<ReadonlySet<string>>(new Set());
  const hints = useHints(sessionId);
  const stateOf = (id: string): StepState | undefined => progress?.steps.find((s) => s.id === id)?.state;

  function toggle(id: string) {
    setExpanded((open) => {
      const next = new Set(open);
      if (!next.delete(id)) next.add(id);
      return next;
    });
  }

  return (
    <div className="px-6 py-5">
      <h2 className="mb-3 flex items-baseline gap-3 text-lg font-semibold">
        {t("list")}
        {progress && (
          <span className="text-xs font-normal text-slate-500">
            {t("doneOf", { done: progress.steps.filter((s) => s.state === "done").length, total: steps.length })}
          </span>
        )}
      </h2>
      {progress?.completed && <CompletionBanner />}
      {progress === undefined && (
        <p role="status" className={`mb-4 text-sm ${loadError ? "text-red-700" : "text-slate-500"}`}>
          {loadError ? `${t("loadFailed")}: ${loadError}` : t("loading")}
        </p>
      )}
      <ol aria-label={t("list")} className="space-y-3">
        {steps.map((step, i) => (
          <StepItem
            key={step.id}
            number={i + 1}
            step={step}
            state={stateOf(step.id)}
            expanded={expanded.has(step.id)}
            onToggle={() => toggle(step.id)}
            hint={
              <Hint
                stepId={step.id}
                canReveal={(stateOf(step.id) === "current" || stateOf(step.id) === "proving") && sessionId !== undefined}
                revealed={progress?.hintsRevealed.includes(step.id) ?? false}
                hints={hints}
              />
            }
          />
        ))}
      </ol>
    </div>
  );
}

/**
 * The bottom of the panel, always in view: the reboot proof, the last check's result and the
 * Check button with the current step it checks (a click on the step scrolls to it).
 */
function CheckBar(props: { sessionId: string | undefined; steps: readonly StepText[]; feed: ProgressFeed; onShowStep(id: string): void }) {
  const { sessionId, steps, feed } = props;
  const t = useTranslations("steps");
  const { progress } = feed;
  const { checking, checkError, check } = useCheck(sessionId, feed);
  const last = progress?.lastCheck ?? undefined;
  // A failed Check of a step that has passed since is no longer true.
  const feedback = last && (last.outcome === "pass" || last.stepId === progress?.currentStepId) ? last : undefined;
  const current = steps.find((s) => s.id === progress?.currentStepId);
  return (
    <div className="shrink-0 space-y-3 border-t border-slate-200 bg-slate-50 px-6 py-3">
      {/* Always mounted, so screen readers announce each new result. */}
      <div aria-live="polite" className="space-y-2">
        {progress?.rebootProof && sessionId && (
          <RebootProofNotice key={progress.rebootProof.passedAt} sessionId={sessionId} machine={progress.rebootProof.machine} />
        )}
        {feedback && <CheckFeedback result={feedback} title={steps.find((s) => s.id === feedback.stepId)?.title} />}
        {checkError && <p className="text-sm text-red-700">{checkError}</p>}
        {feed.status === "reconnecting" && progress !== undefined && <p className="text-xs text-amber-800">{t("reconnecting")}</p>}
      </div>
      {current && (
        <div className="flex items-center gap-3">
          <button
            type="button"
            onClick={check}
            disabled={checking || sessionId === undefined}
            aria-busy={checking}
            data-testid="check-button"
            className="inline-flex items-center gap-2 rounded-md bg-sky-600 px-4 py-2 text-sm font-semibold text-white shadow-sm transition hover:bg-sky-700 focus-visible:outline-2 focus-visible:outline-offset-2 focus-visible:outline-sky-600 disabled:cursor-not-allowed disabled:bg-sky-400"
          >
            {checking && <Spinner />}
            {checking ? t("checking") : t("check")}
          </button>
          <button
            type="button"
            onClick={() => props.onShowStep(current.id)}
            title={t("goToStep")}
            className="min-w-0 text-left text-xs text-slate-500 hover:text-sky-700 focus-visible:outline-2 focus-visible:outline-sky-500"
          >
            <span className="block truncate font-medium text-slate-700">
              {t("step", { n: steps.indexOf(current) + 1 })}: {current.title}
            </span>
            <span className="block">{t("checkedOn", { machine: current.machine })}</span>
          </button>
        </div>
      )}
    </div>
  );
}

/** Runs the current step's check on the learner's click (one at a time) and applies the progress it answers. */
function useCheck(sessionId: string | undefined, feed: ProgressFeed) {
  const t = useTranslations("steps");
  const tg = useTranslations("grader");
  const [checking, setChecking] = useState(false);
  const [checkError, setCheckError] = useState<string>();

  async function check() {
    if (!sessionId || checking) return;
    setChecking(true);
    setCheckError(undefined);
    try {
      feed.apply(await runCheck(sessionId));
    } catch (err) {
      setCheckError(err instanceof GraderApiError ? `${t("checkFailed")}: ${graderErrorText(err, tg)}` : t("checkFailed"));
    } finally {
      setChecking(false);
    }
  }

  return { checking, checkError, check };
}

function StepItem(props: {
  number: number;
  step: StepText;
  state: StepState | undefined;
  expanded: boolean;
  onToggle(): void;
  hint: ReactNode;
}) {
  const t = useTranslations("steps");
  const { number, step, state, expanded, onToggle, hint } = props;
  const bodyId = useId();
  const open = state === "current" || state === "proving" || (state === "done" && expanded);
  const heading = (
    <>
      <StateIcon state={state} />
      <span className="min-w-0">
        <span className="block text-xs text-slate-500">
          {t("step", { n: number })}
          {state && <span className="sr-only">（{t(`state.${state}`)}）</span>}
        </span>
        <span className="block font-semibold">{step.title}</span>
      </span>
    </>
  );

  return (
    <li
      data-step-id={step.id}
      data-state={state}
      aria-current={state === "current" || state === "proving" ? "step" : undefined}
      className={`rounded-lg border ${
        state === "current"
          ? "border-sky-300 bg-white shadow-sm"
          : state === "proving"
            ? "border-amber-300 bg-white shadow-sm"
            : state === "done"
              ? "border-emerald-200 bg-emerald-50/40"
              : "border-slate-200 bg-slate-50 text-slate-400"
      }`}
    >
      {state === "done" ? (
        <button
          type="button"
          onClick={onToggle}
          aria-expanded={expanded}
          aria-controls={bodyId}
          title={expanded ? t("hide") : t("show")}
          className="flex w-full items-start gap-3 rounded-lg px-4 py-3 text-left text-slate-700 hover:bg-emerald-50 focus-visible:outline-2 focus-visible:outline-sky-500"
        >
          {heading}
          <span aria-hidden="true" className={`ml-auto self-center text-slate-400 transition ${expanded ? "rotate-90" : ""}`}>
            ▸
          </span>
        </button>
      ) : (
        <div className="flex items-start gap-3 px-4 py-3">{heading}</div>
      )}
      {open && (
        <div id={bodyId} className="border-t border-slate-100 px-4 pt-1 pb-4">
          <LessonMarkdown markdown={step.textMarkdown} />
          {hint}
        </div>
      )}
    </li>
  );
}

function StateIcon({ state }: { state: StepState | undefined }) {
  const common = "mt-0.5 h-5 w-5 shrink-0";
  if (state === "done") {
    return (
      <svg aria-hidden="true" viewBox="0 0 20 20" className={`${common} text-emerald-600`} fill="currentColor">
        <path
          fillRule="evenodd"
          d="M10 18a8 8 0 1 0 0-16 8 8 0 0 0 0 16Zm3.857-9.809a.75.75 0 0 0-1.214-.882l-3.483 4.79-1.88-1.88a.75.75 0 1 0-1.06 1.061l2.5 2.5a.75.75 0 0 0 1.137-.089l4-5.5Z"
          clipRule="evenodd"
        />
      </svg>
    );
  }
  if (state === "current") {
    return (
      <svg aria-hidden="true" viewBox="0 0 20 20" className={`${common} text-sky-600`} fill="currentColor">
        <circle cx="10" cy="10" r="8" fill="none" stroke="currentColor" strokeWidth="1.75" />
        <circle cx="10" cy="10" r="3.5" />
      </svg>
    );
  }
  if (state === "proving") {
    // A circular arrow: passed, waiting for the machine to come back from a reboot.
    return (
      <svg
        aria-hidden="true"
        viewBox="0 0 20 20"
        className={`${common} text-amber-600`}
        fill="none"
        stroke="currentColor"
        strokeWidth="1.75"
      >
        <path strokeLinecap="round" strokeLinejoin="round" d="M16 10a6 6 0 1 1-1.76-4.24M16 3.5v3.25h-3.25" />
      </svg>
    );
  }
  if (state === "locked") {
    return (
      <svg aria-hidden="true" viewBox="0 0 20 20" className={`${common} text-slate-400`} fill="currentColor">
        <path
          fillRule="evenodd"
          d="M10 1a4.5 4.5 0 0 0-4.5 4.5V9H5a2 2 0 0 0-2 2v6a2 2 0 0 0 2 2h10a2 2 0 0 0 2-2v-6a2 2 0 0 0-2-2h-.5V5.5A4.5 4.5 0 0 0 10 1Zm3 8V5.5a3 3 0 1 0-6 0V9h6Z"
          clipRule="evenodd"
        />
      </svg>
    );
  }
  // Progress not loaded yet.
  return <span aria-hidden="true" className={`${common} rounded-full border-2 border-slate-200`} />;
}

function CheckFeedback({ result, title }: { result: CheckResult; title: string | undefined }) {
  const t = useTranslations("steps");
  const pass = result.outcome === "pass";
  const tone = pass
    ? "border-emerald-300 bg-emerald-50 text-emerald-900"
    : result.outcome === "fail"
      ? "border-amber-300 bg-amber-50 text-amber-900"
      : "border-red-300 bg-red-50 text-red-900";
  return (
    <div
      data-testid="check-feedback"
      data-outcome={result.outcome}
      data-step-id={result.stepId}
      className={`rounded-md border px-3 py-2 ${tone}`}
    >
      <p className="text-sm">
        <span className="font-semibold">{t(`outcome.${result.outcome}`)}</span>
        {title && <span className="ml-2 text-xs opacity-80">{title}</span>}
      </p>
      {(result.output !== "" || !pass) && (
        <pre className="mt-1.5 max-h-40 overflow-auto rounded bg-white/70 px-2 py-1.5 font-mono text-xs leading-5 whitespace-pre-wrap text-slate-800">
          {result.output === "" ? t("noOutput") : result.output}
        </pre>
      )}
    </div>
  );
}

/**
 * "Passed now — reboot to prove it": what the learner does next, with a button that reboots the
 * machine cleanly (POST …/machines/:name/reboot). The check runs again by itself once the machine
 * is back; the step then turns done (or back to current if the state did not survive).
 */
function RebootProofNotice({ sessionId, machine }: { sessionId: string; machine: string }) {
  const t = useTranslations("steps");
  // Keyed by the pass's time: a new "passed now" (after a failed proof) offers the button again.
  const [state, setState] = useState<"idle" | "busy" | "asked" | "error">("idle");
  const reboot = async () => {
    setState("busy");
    try {
      const response = await fetch(`/api/sessions/${encodeURIComponent(sessionId)}/machines/${encodeURIComponent(machine)}/reboot`, {
        method: "POST",
      });
      setState(response.ok ? "asked" : "error");
    } catch {
      setState("error");
    }
  };
  return (
    <div
      data-testid="reboot-proof"
      data-machine={machine}
      className="rounded-md border border-amber-300 bg-amber-50 px-3 py-2 text-amber-950"
    >
      <p className="text-sm font-semibold">{t("provingTitle")}</p>
      <p className="mt-1 text-xs leading-5">{t("provingBody", { machine })}</p>
      <div className="mt-2 flex items-center gap-3">
        <button
          type="button"
          data-testid="reboot-and-verify"
          onClick={() => void reboot()}
          disabled={state === "busy" || state === "asked"}
          className="inline-flex items-center gap-2 rounded-md border border-amber-400 bg-white px-3 py-1.5 text-xs font-semibold text-amber-900 hover:bg-amber-100 focus-visible:outline-2 focus-visible:outline-amber-500 disabled:cursor-not-allowed disabled:opacity-60"
        >
          {state === "busy" && <Spinner />}
          {t("rebootAndVerify", { machine })}
        </button>
        {state === "asked" && <span className="text-xs">{t("rebooting", { machine })}</span>}
        {state === "error" && <span className="text-xs text-red-700">{t("rebootFailed")}</span>}
      </div>
    </div>
  );
}

function CompletionBanner() {
  const t = useTranslations("steps");
  return (
    <div
      data-testid="lab-complete"
      role="status"
      className="mb-5 rounded-lg border border-emerald-300 bg-emerald-50 px-4 py-3 text-emerald-900"
    >
      <p className="flex items-center gap-2 font-semibold">
        <StateIcon state="done" />
        {t("completedTitle")}
      </p>
      <p className="mt-1 pl-7 text-sm">{t("completedBody")}</p>
    </div>
  );
}

function Spinner() {
  return (
    <svg aria-hidden="true" viewBox="0 0 24 24" className="h-4 w-4 animate-spin" fill="none">
      <circle cx="12" cy="12" r="9" stroke="currentColor" strokeOpacity="0.3" strokeWidth="3" />
      <path d="M21 12a9 9 0 0 0-9-9" stroke="currentColor" strokeWidth="3" strokeLinecap="round" />
    </svg>
  );
}

/** Hint texts fetched in this page, by step id; a reveal is requested at most once at a time. */
type Hints = {
  text: Readonly<Record<string, string>>;
  loading: ReadonlySet<string>;
  failed: ReadonlySet<string>;
  reveal(stepId: string): void;
};

function useHints(sessionId: string | undefined): Hints {
  const [text, setText] = useState<Readonly<Record<string, string>>>({});
  const [loading, setLoading] = useState<ReadonlySet<string>>(new Set());
  const [failed, setFailed] = useState<ReadonlySet<string>>(new Set());
  const inFlight = useRef(new Set<string>());

  const reveal = useCallback(
    (stepId: string) => {
      if (!sessionId || inFlight.current.has(stepId)) return;
      inFlight.current.add(stepId);
      setLoading((s) => new Set(s).add(stepId));
      setFailed((s) => without(s, stepId));
      revealHint(sessionId, stepId)
        .then(
          (hint) => setText((t) => ({ ...t, [stepId]: hint })),
          () => setFailed((s) => new Set(s).add(stepId)),
        )
        .finally(() => {
          inFlight.current.delete(stepId);
          setLoading((s) => without(s, stepId));
        });
    },
    [sessionId],
  );

  return { text, loading, failed, reveal };
}

function without(set: ReadonlySet<string>, id: string): ReadonlySet<string> {
  return new Set([...set].filter((x) => x !== id));
}

/**
 * A step's hint: a button while it is hidden, the hint once revealed. A hint revealed earlier
 * (progress.hintsRevealed, e.g. before a reload) is shown without a click.
 */
function Hint({ stepId, canReveal, revealed, hints }: { stepId: string; canReveal: boolean; revealed: boolean; hints: Hints }) {
  const t = useTranslations("steps");
  const text = hints.text[stepId];
  const loading = hints.loading.has(stepId);
  const failed = hints.failed.has(stepId);
  const { reveal } = hints;

  useEffect(() => {
    if (revealed && text === undefined && !loading && !failed) reveal(stepId);
  }, [revealed, text, loading, failed, reveal, stepId]);

  if (text !== undefined) {
    return (
      <aside data-testid="hint" data-step-id={stepId} className="mt-4 rounded-md border border-amber-200 bg-amber-50 px-4 py-2">
        <p className="text-xs font-semibold text-amber-800">{t("hintTitle")}</p>
        <LessonMarkdown markdown={text} />
      </aside>
    );
  }
  if (!canReveal && !revealed) return null;
  return (
    <div className="mt-4 flex items-center gap-3 text-sm">
      {failed ? (
        <>
          <span className="text-red-700">{t("hintFailed")}</span>
          <button type="button" onClick={() => reveal(stepId)} className="text-sky-700 underline underline-offset-2 hover:text-sky-900">
            {t("retry")}
          </button>
        </>
      ) : loading || revealed ? (
        <span className="text-slate-500">{t("hintLoading")}</span>
      ) : (
        <button
          type="button"
          onClick={() => reveal(stepId)}
          className="rounded-md border border-amber-300 bg-white px-3 py-1.5 text-amber-900 shadow-sm hover:bg-amber-50 focus-visible:outline-2 focus-visible:outline-amber-500"
        >
          {t("hint")}
        </button>
      )}
    </div>
  );
}
